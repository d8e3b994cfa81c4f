package admission

import (
	"fmt"
	"path/filepath"

	"warrant/broker/internal/identity"
	"warrant/broker/internal/policy"
	"warrant/broker/internal/statedir"
	"warrant/wire"
)

// systemRoots are the directories no workspace may be or contain: a
// project under one (/var/www, /usr/local/src) is fine.
var systemRoots = []string{"/usr", "/etc", "/bin", "/lib", "/lib32", "/lib64", "/libx32", "/sbin", "/boot", "/var"}

// Authority opens the places no workspace may overlap (identity.Protect)
// and measures the directories no program's own directory is granted as
// (policy.Withhold): the broker's authority — its state directory d and
// the directories of its binaries (the broker's and the launcher's) —
// and the host's, with the operator's configured read paths. The home
// directory is policy.HomeDir's; without one, none is protected.
func Authority(d statedir.Dirs, binaries, readPaths []string) (*identity.Protected, *policy.Withheld, error) {
	home := policy.HomeDir()
	places := []identity.Place{{Name: "the filesystem root", Path: "/", Rule: identity.Itself}}
	if home != "" {
		places = append(places, identity.Place{Name: "the home directory", Path: home, Rule: identity.Itself, Optional: true})
	}
	places = append(places,
		identity.Place{Name: "the broker's state directory", Path: d.Root, Holds: "journal.db, keys/, run/, actions/, caches/", Rule: identity.Overlap},
		identity.Place{Name: "the broker's key directory", Path: d.Keys, Rule: identity.Overlap},
		identity.Place{Name: "the broker's socket directory", Path: d.Run, Rule: identity.Overlap},
		identity.Place{Name: "the broker's action directory", Path: d.Actions, Rule: identity.Overlap},
		identity.Place{Name: "the broker's cache directory", Path: d.Caches, Rule: identity.Overlap})
	for _, bin := range binaries {
		dirs := []string{filepath.Dir(bin)}
		if real, err := filepath.EvalSymlinks(bin); err == nil && filepath.Dir(real) != dirs[0] {
			dirs = append(dirs, filepath.Dir(real))
		}
		for _, dir := range dirs {
			places = append(places, identity.Place{Name: "the directory of the broker's binary " + filepath.Base(bin),
				Path: dir, Rule: identity.Overlap})
		}
	}
	for _, p := range systemRoots {
		places = append(places, identity.Place{Name: "the system directory", Path: p, Rule: identity.ItOrAbove, Optional: true})
	}
	for _, p := range readPaths {
		places = append(places, identity.Place{Name: "the configured read path", Path: p, Rule: identity.ItOrAbove})
	}
	for _, p := range wire.KernelFS { // no workspace may be or lie inside one
		places = append(places, identity.Place{Name: "the kernel's filesystem", Path: p, Rule: identity.ItOrBelow, Optional: true})
	}
	protected, err := identity.Protect(places)
	if err != nil {
		return nil, nil, fmt.Errorf("protect the broker's authority: %w", err)
	}
	withheld, err := policy.Withhold(home, d.Root)
	if err != nil {
		protected.Close()
		return nil, nil, fmt.Errorf("protect the broker's authority: %w", err)
	}
	return protected, withheld, nil
}
