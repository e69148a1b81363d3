// Package util holds the small, pure helpers the wheel is built on: UTC
// millisecond scores, epoch-minute slicing, Redis key naming, and the Redis
// Cluster hash slot of a key.
//
// Everything here is deterministic and free of I/O, so the key layout and
// the time arithmetic can be tested in isolation and read in one place.
package util
