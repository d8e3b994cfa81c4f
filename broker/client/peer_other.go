//go:build !linux

package client

import "net"

// peerStopped is never known here (no /proc): a stopped broker is given
// up on by the reply timeout alone.
func peerStopped(net.Conn) (int, bool) { return 0, false }
