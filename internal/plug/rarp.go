package plug

import (
	"encoding/binary"
	"net"
)

// RARPFrame is the frame a hypervisor broadcasts for a resumed VM (QEMU's
// self-announce): a RARP reverse request for the VM's MAC, padded to the
// Ethernet minimum. OVN's activation-strategy=rarp unblocks a port on a
// migration's target chassis when one arrives from it.
func RARPFrame(mac net.HardwareAddr) []byte {
	f := make([]byte, 60)
	copy(f[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:12], mac)
	binary.BigEndian.PutUint16(f[12:], 0x8035) // RARP
	binary.BigEndian.PutUint16(f[14:], 1)      // hardware: Ethernet
	binary.BigEndian.PutUint16(f[16:], 0x0800) // protocol: IPv4
	f[18], f[19] = 6, 4
	binary.BigEndian.PutUint16(f[20:], 3) // reverse request
	copy(f[22:28], mac)                   // sender MAC; sender IP 0.0.0.0
	copy(f[32:38], mac)                   // target MAC; target IP 0.0.0.0
	return f
}
