package identity

import (
	"debug/elf"
	"io"
	"strings"

	"warrant/wire"
)

// DefaultBinding decides how an executable's bytes are bound when the
// operator pins nothing. A sealed snapshot is the strongest binding, but
// the program then runs as /memfd:…, so it may only be chosen where that
// is known to be safe: an ELF program that finds nothing through its own
// location — no $ORIGIN in its DT_RPATH or DT_RUNPATH (java's libjli)
// and not a Go program (Go's toolchain finds GOROOT from os.Executable;
// any Go program may re-exec itself the same way). Everything else runs
// in place: scripts (their interpreter must see their real path to find
// sibling files), Go programs, $ORIGIN users, and files that are not ELF.
func DefaultBinding(exe io.ReaderAt, script bool) wire.Binding {
	if script {
		return wire.InPlace
	}
	f, err := elf.NewFile(exe)
	if err != nil {
		return wire.InPlace
	}
	if f.Section(".go.buildinfo") != nil {
		return wire.InPlace
	}
	for _, tag := range []elf.DynTag{elf.DT_RPATH, elf.DT_RUNPATH} {
		paths, _ := f.DynString(tag)
		for _, p := range paths {
			if strings.Contains(p, "$ORIGIN") || strings.Contains(p, "${ORIGIN}") {
				return wire.InPlace
			}
		}
	}
	return wire.SealedSnapshot
}
