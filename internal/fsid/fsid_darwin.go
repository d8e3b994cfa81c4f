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

// dirFacts returns no mount id (macOS has none; (dev, ino) identify a
// directory there) and the birth time fstat reported.
func dirFacts(_ int, st *unix.Stat_t) (mnt uint64, birthNs int64, err error) {
	return 0, st.Btim.Nano(), nil
}
