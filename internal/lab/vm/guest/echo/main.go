// Command netshift-guest-echo is the lab's guest's own program, its PID 1
// once /init has set up eth0: it answers every UDP datagram on port 7000
// with the same bytes, so the lab counts from outside the guest what a
// migration lost. It never exits: PID 1's exit would panic the guest kernel.
package main

import (
	"fmt"
	"net"
	"os"
	"time"
)

const port = 7000

func main() {
	for {
		if err := answer(); err != nil {
			fmt.Fprintf(os.Stderr, "netshift-guest: %v; again in 1s\n", err)
		}
		time.Sleep(time.Second)
	}
}

func answer() error {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{Port: port})
	if err != nil {
		return err
	}
	defer conn.Close()
	fmt.Fprintf(os.Stdout, "netshift-guest: answering on udp port %d\n", port)
	buf := make([]byte, 2048)
	for {
		n, from, err := conn.ReadFromUDP(buf)
		if err != nil {
			return err
		}
		_, _ = conn.WriteToUDP(buf[:n], from)
	}
}
