package lab

import (
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"netshift.io/netshift/internal/netdev"
	"netshift.io/netshift/internal/plug"
)

// vmTraffic is the migrating VM's side of the exchange: numbered datagrams to
// a peer every interval, each echoed back; every send and echo time is kept,
// so losses and gaps are counted by sequence number afterwards.
type vmTraffic struct {
	conn     *net.UDPConn
	peer     *net.UDPAddr
	interval time.Duration
	start    time.Time

	mu     sync.Mutex
	paused bool
	sent   []time.Duration // by sequence number, since start
	echoed []time.Duration // 0: no echo (yet)
	stop   chan struct{}
	done   sync.WaitGroup
}

const vmEchoPort = 7000

// startEcho answers every datagram on the peer's port, from inside its namespace.
func startEcho(netns string) (*net.UDPConn, error) {
	var conn *net.UDPConn
	err := netdev.InNetns(netns, func() (err error) {
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{Port: vmEchoPort})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("VM peer in %s: %w", netns, err)
	}
	go func() {
		buf := make([]byte, 64)
		for {
			n, from, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			_, _ = conn.WriteToUDP(buf[:n], from)
		}
	}()
	return conn, nil
}

// startVMTraffic opens the VM's socket inside its namespace (the socket stays
// there while the VM's interface is replaced) and starts sending.
func startVMTraffic(netns, peerIP string, interval time.Duration) (*vmTraffic, error) {
	v := &vmTraffic{peer: &net.UDPAddr{IP: net.ParseIP(peerIP), Port: vmEchoPort}, interval: interval, start: time.Now(), stop: make(chan struct{})}
	err := netdev.InNetns(netns, func() (err error) {
		v.conn, err = net.ListenUDP("udp4", &net.UDPAddr{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("VM in %s: %w", netns, err)
	}
	v.done.Add(2)
	go v.receive()
	go v.send()
	return v, nil
}

func (v *vmTraffic) send() {
	defer v.done.Done()
	t := time.NewTicker(v.interval)
	defer t.Stop()
	buf := make([]byte, 8)
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
		}
		v.mu.Lock()
		if v.paused {
			v.mu.Unlock()
			continue
		}
		seq := len(v.sent)
		v.sent = append(v.sent, time.Since(v.start))
		v.echoed = append(v.echoed, 0)
		v.mu.Unlock()
		binary.BigEndian.PutUint64(buf, uint64(seq))
		_, _ = v.conn.WriteToUDP(buf, v.peer) // a send that fails is a lost message like any other
	}
}

func (v *vmTraffic) receive() {
	defer v.done.Done()
	buf := make([]byte, 64)
	for {
		n, _, err := v.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if n < 8 {
			continue
		}
		seq := int(binary.BigEndian.Uint64(buf))
		now := time.Since(v.start)
		v.mu.Lock()
		if seq < len(v.echoed) && v.echoed[seq] == 0 {
			v.echoed[seq] = now
		}
		v.mu.Unlock()
	}
}

// next is the sequence number the next datagram will carry.
func (v *vmTraffic) next() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.sent)
}

// echoedSince counts the echoes of datagrams from seq on.
func (v *vmTraffic) echoedSince(seq int) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for i := seq; i < len(v.echoed); i++ {
		if v.echoed[i] != 0 {
			n++
		}
	}
	return n
}

// pause stops the VM's sending, as the hypervisor stops its CPUs, and gives
// the datagrams already on their way up to wait to be answered.
func (v *vmTraffic) pause(wait time.Duration) {
	v.mu.Lock()
	v.paused = true
	v.mu.Unlock()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		v.mu.Lock()
		open := 0
		for i := len(v.echoed) - 1; i >= 0 && i >= len(v.echoed)-50; i-- {
			if v.echoed[i] == 0 {
				open++
			}
		}
		v.mu.Unlock()
		if open == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (v *vmTraffic) resume() {
	v.mu.Lock()
	v.paused = false
	v.mu.Unlock()
}

// close stops sending, waits for late echoes, and returns the record.
func (v *vmTraffic) close(grace time.Duration) (sent, echoed []time.Duration) {
	close(v.stop)
	time.Sleep(grace)
	v.conn.Close()
	v.done.Wait()
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]time.Duration(nil), v.sent...), append([]time.Duration(nil), v.echoed...)
}

// exchangeFigures counts the datagrams in [from, to) that were never answered,
// and the longest time any of them waited for an answer to it or to a later
// one: the time the VM's traffic stood still.
func exchangeFigures(sent, echoed []time.Duration, from, to int) (lost int, maxGap time.Duration) {
	to = min(to, len(sent))
	var nextEcho time.Duration // the earliest echo of a datagram at or after i
	for i := len(sent) - 1; i >= from; i-- {
		if echoed[i] != 0 && (nextEcho == 0 || echoed[i] < nextEcho) {
			nextEcho = echoed[i]
		}
		if i >= to {
			continue
		}
		if echoed[i] == 0 {
			lost++
		}
		if nextEcho != 0 && nextEcho-sent[i] > maxGap {
			maxGap = nextEcho - sent[i]
		}
	}
	return lost, maxGap
}

// announce sends the RARP frames a hypervisor sends for a resumed VM (QEMU's
// self-announce: at once, then after 50, 150, 250 and 350 ms more), from
// inside the VM's namespace on its eth0. OVN's activation-strategy=rarp lets
// the target chassis pass the port's traffic once it sees one.
func announce(netns string, mac net.HardwareAddr, stop <-chan struct{}) error {
	var fd, ifindex int
	err := netdev.InNetns(netns, func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		ifindex = ifi.Index
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
		return err
	})
	if err != nil {
		return fmt.Errorf("VM in %s: RARP socket: %w", netns, err)
	}
	go func() {
		defer unix.Close(fd)
		frame := plug.RARPFrame(mac)
		to := &unix.SockaddrLinklayer{Ifindex: ifindex, Halen: 6, Protocol: htons(0x8035)}
		copy(to.Addr[:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		for _, wait := range []time.Duration{0, 50, 150, 250, 350} {
			select {
			case <-stop:
				return
			case <-time.After(wait * time.Millisecond):
			}
			_ = unix.Sendto(fd, frame, 0, to)
		}
	}()
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
