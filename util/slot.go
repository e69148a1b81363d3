package util

import "strings"

// ClusterSlots is the number of hash slots of a Redis Cluster.
const ClusterSlots = 16384

// HashSlot returns the Redis Cluster slot of key: CRC16 (XMODEM) of its hash
// tag, the part between the first '{' and the next '}' when that part is not
// empty, or of the whole key otherwise.
func HashSlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key) % ClusterSlots)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster uses for key slots.
func crc16(s string) uint16 {
	return crc16Update(0, s)
}

// crc16Update continues a CRC-16/XMODEM over s: crc16(a+b) equals
// crc16Update(crc16(a), b).
func crc16Update[T string | []byte](crc uint16, s T) uint16 {
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}

// crc16Table holds the CRC of every byte value, for crc16Update to take a
// byte at a time. Computed once; never written after.
var crc16Table = func() (t [256]uint16) {
	for b := range t {
		crc := uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[b] = crc
	}
	return t
}()
