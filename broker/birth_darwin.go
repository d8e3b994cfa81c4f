package broker

import (
	"os"

	"golang.org/x/sys/unix"
)

// birthNs returns the birth time of the file open at f in nanoseconds.
func birthNs(f *os.File) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, err
	}
	return st.Btim.Nano(), nil
}
