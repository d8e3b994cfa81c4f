package fsid

import (
	"golang.org/x/sys/unix"

	"warrant/wire"
)

func fileIdentity(st *unix.Stat_t, path string) wire.FileIdentity {
	return wire.FileIdentity{
		Path: path, Dev: uint64(st.Dev), Ino: st.Ino, Mode: uint32(st.Mode), UID: st.Uid, Size: uint64(st.Size),
		MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano(),
	}
}

// mountID is 0 on macOS, which has no mount ids; (dev, ino) identify a
// directory there.
func mountID(int) (uint64, error) { return 0, nil }
