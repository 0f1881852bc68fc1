package netdev

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SetTxChecksum turns a link's transmit checksum offload on or off, in the
// network namespace netnsRef ("" the caller's own). A veth into Open
// vSwitch's userspace datapath needs it off: that datapath forwards a
// segment whose checksum the sender left to the hardware without ever
// filling it in, and the receiver drops it.
func SetTxChecksum(netnsRef, link string, on bool) error {
	return InNetns(netnsRef, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%s: transmit checksum offload: %w", link, err)
		}
		defer unix.Close(fd)
		value := struct{ cmd, data uint32 }{cmd: unix.ETHTOOL_STXCSUM}
		if on {
			value.data = 1
		}
		// struct ifreq: the name, then (ifr_data) a pointer to the ethtool command.
		var req struct {
			name [unix.IFNAMSIZ]byte
			data unsafe.Pointer
			_    [16]byte
		}
		if len(link) >= unix.IFNAMSIZ {
			return fmt.Errorf("%s: transmit checksum offload: name longer than %d bytes", link, unix.IFNAMSIZ-1)
		}
		copy(req.name[:], link)
		req.data = unsafe.Pointer(&value)
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req))); errno != 0 {
			return fmt.Errorf("%s: transmit checksum offload %s: %w", link, map[bool]string{true: "on", false: "off"}[on], errno)
		}
		return nil
	})
}
