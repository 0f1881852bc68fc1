package probe

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

type servers struct {
	listeners []net.Listener
	http      *http.Server
	httpsPod  Pod
	pool      *x509.CertPool
	certBytes int
	wg        sync.WaitGroup
}

// startServers listens in every pod: an echo server for the long-lived
// connections (served by the loop), a one-byte server for the short-lived ones, and in the last
// pod an HTTPS server with a large certificate.
func startServers(cfg Config, loop *liveLoop) (*servers, error) {
	s := &servers{}
	for _, p := range cfg.Pods {
		for port, serve := range map[int]func(net.Conn){echoPort: loop.serveEcho, shortPort: oneByte} {
			var l net.Listener
			err := cfg.InNetns(p.Netns, func() (err error) {
				l, err = net.Listen("tcp", net.JoinHostPort(p.IP, strconv.Itoa(port)))
				return err
			})
			if err != nil {
				s.close()
				return nil, fmt.Errorf("pod %s: listen on %d: %w", p.Name, port, err)
			}
			s.listeners = append(s.listeners, l)
			s.wg.Add(1)
			go func() { defer s.wg.Done(); acceptLoop(l, serve) }()
		}
	}
	cert, err := largeCertificate()
	if err != nil {
		s.close()
		return nil, err
	}
	s.certBytes = len(cert.Certificate[0])
	s.pool = x509.NewCertPool()
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	s.pool.AddCert(leaf)
	s.httpsPod = cfg.Pods[len(cfg.Pods)-1]
	var l net.Listener
	if err := cfg.InNetns(s.httpsPod.Netns, func() (err error) {
		l, err = net.Listen("tcp", net.JoinHostPort(s.httpsPod.IP, strconv.Itoa(httpsPort)))
		return err
	}); err != nil {
		s.close()
		return nil, fmt.Errorf("pod %s: listen on %d: %w", s.httpsPod.Name, httpsPort, err)
	}
	s.http = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") }),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
			// TLS 1.2 sends the certificate in the clear in full-size segments.
			MaxVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 5 * time.Second,
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); _ = s.http.ServeTLS(l, "", "") }()
	return s, nil
}

func (s *servers) close() {
	for _, l := range s.listeners {
		_ = l.Close()
	}
	if s.http != nil {
		_ = s.http.Close()
	}
	s.wg.Wait()
}

func acceptLoop(l net.Listener, serve func(net.Conn)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		wg.Add(1)
		go func() { defer wg.Done(); defer c.Close(); serve(c) }()
	}
}

func oneByte(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err == nil {
		_, _ = c.Write(b)
	}
}

// largeCertificate makes a self-signed certificate of about 24 KB (many
// subject alternative names), well over one TLS record of 16 KB.
func largeCertificate() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	names := []string{"probe.lab"}
	for i := range 700 {
		names = append(names, fmt.Sprintf("padding-%04d.probe.netshift-lab.invalid", i))
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "probe.lab"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: names, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

type httpsCounter struct {
	counter
	tls, non200 int
}

// httpsClient makes one request per new connection, as a client that opens
// a connection per request would.
func httpsClient(ctx context.Context, cfg Config, from Pod, s *servers, c *httpsCounter) {
	tr := &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: s.pool, ServerName: "probe.lab", MaxVersion: tls.VersionTLS12},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dial(cfg, from, addr, 3*time.Second)
		},
		TLSHandshakeTimeout: 3 * time.Second,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	url := "https://" + net.JoinHostPort(s.httpsPod.IP, strconv.Itoa(httpsPort)) + "/"
	for ctx.Err() == nil {
		resp, err := client.Get(url)
		if ctx.Err() != nil && err != nil {
			return
		}
		c.mu.Lock()
		c.attempts++
		switch {
		case err != nil:
			c.failures++
			var cve *tls.CertificateVerificationError
			if errors.As(err, &cve) || strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "TLS handshake") {
				c.tls++
				c.reasons["tls: "+reason(err)]++
			} else {
				c.reasons[reason(err)]++
			}
		case resp.StatusCode != http.StatusOK:
			c.failures++
			c.non200++
			c.reasons[fmt.Sprintf("HTTP %d", resp.StatusCode)]++
		}
		c.mu.Unlock()
		if resp != nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
}
