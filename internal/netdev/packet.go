package netdev

// Htons is a 16-bit value in network byte order on this (little-endian)
// host: what packet sockets take as their protocol (unix.ETH_P_ALL and the like).
func Htons(v uint16) uint16 { return v<<8 | v>>8 }
