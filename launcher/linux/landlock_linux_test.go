package linux

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"warrant/internal/landlockabi"
	"warrant/wire"
)

// TestKnownABIsHandleEveryRight checks go-landlock's presets against the
// kernel's UAPI constants (x/sys/unix), ABI by ABI: a preset that forgot a
// right would leave it unhandled, that is allowed, in every action.
func TestKnownABIsHandleEveryRight(t *testing.T) {
	fsV1 := uint64(unix.LANDLOCK_ACCESS_FS_MAKE_SYM<<1 - 1) // execute … make_sym
	tcp := uint64(unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP)
	udp := uint64(unix.LANDLOCK_ACCESS_NET_BIND_UDP | unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP)
	scopes := uint64(unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL)
	for abi := 1; abi < len(knownABIs); abi++ {
		fs, net, scoped := fsV1, uint64(0), uint64(0)
		for step, right := range map[int]uint64{2: unix.LANDLOCK_ACCESS_FS_REFER, 3: unix.LANDLOCK_ACCESS_FS_TRUNCATE,
			5: unix.LANDLOCK_ACCESS_FS_IOCTL_DEV, 9: unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX} {
			if abi >= step {
				fs |= right
			}
		}
		if abi >= 4 {
			net = tcp
		}
		if abi >= 10 {
			net |= udp
		}
		if abi >= 6 {
			scoped = scopes
		}
		k := knownABIs[abi]
		if uint64(k.HandledAccessFS) != fs || uint64(k.HandledAccessNet) != net || uint64(k.Scoped) != scoped {
			t.Errorf("ABI %d: preset handles fs %#x net %#x scoped %#x, want %#x %#x %#x",
				abi, uint64(k.HandledAccessFS), uint64(k.HandledAccessNet), uint64(k.Scoped), fs, net, scoped)
		}
	}
	if len(knownABIs)-1 < 10 {
		t.Errorf("newest known ABI is %d, want at least 10", len(knownABIs)-1)
	}
}

// landlockNetEnv names the ports TestHelperLandlockNetChild is given (the
// request's egress port, and another), and makes the test binary that
// child.
const landlockNetEnv = "WARRANT_LAUNCHER_LANDLOCK_NET_CHILD"

// TestEgressPortIsTheOnlyTCPConnect: restrictFS with an egress port lets
// the thread connect a TCP socket to that port and to no other, and bind
// none; without one it connects nowhere. A child applies step 9 to itself
// (no seccomp: Landlock alone, the second wall) and tries; each listener
// on 127.0.0.1 receives exactly the connections reported.
func TestEgressPortIsTheOnlyTCPConnect(t *testing.T) {
	if abi := landlockabi.Running(); abi < landlockabi.TCP {
		t.Skipf("skip: Landlock ABI %d has no TCP rules", abi)
	}
	for _, c := range []struct {
		name                 string
		egress               bool
		connect, other, bind string
	}{
		{"with an egress port", true, "ok", "EACCES", "EACCES"},
		{"without", false, "EACCES", "EACCES", "EACCES"},
	} {
		t.Run(c.name, func(t *testing.T) {
			allowed, other := tcpListener(t), tcpListener(t)
			egress := 0
			if c.egress {
				egress = port(allowed)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperLandlockNetChild$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:%d:%d:%s", landlockNetEnv, egress, port(allowed), port(other), t.TempDir()))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the child: %v\n%s", err, out)
			}
			want := fmt.Sprintf("connect %s\nconnect_other %s\nbind %s\n", c.connect, c.other, c.bind)
			if string(out) != want {
				t.Errorf("the child printed\n%s\nwant\n%s", out, want)
			}
			if got := accepted(allowed); got != (c.connect == "ok") {
				t.Errorf("the egress port's listener received a connection: %v, want %v", got, !got)
			}
			if accepted(other) {
				t.Error("the other port's listener received a connection")
			}
		})
	}
}

// TestHelperLandlockNetChild is the child of TestEgressPortIsTheOnlyTCPConnect.
func TestHelperLandlockNetChild(t *testing.T) {
	args := os.Getenv(landlockNetEnv)
	if args == "" {
		t.Skip("skip: the helper process of TestEgressPortIsTheOnlyTCPConnect")
	}
	var egress, allowed, other int
	var dir string
	if _, err := fmt.Sscanf(args, "%d:%d:%d:%s", &egress, &allowed, &other, &dir); err != nil {
		fmt.Println("arguments", err)
		os.Exit(1)
	}
	os.Exit(landlockNetChild(uint16(egress), allowed, other, dir))
}

func landlockNetChild(egress uint16, allowed, other int, dir string) int {
	runtime.LockOSThread() // the domain is this thread's
	ws, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Println("open", err)
		return 1
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fmt.Println("no_new_privs", err)
		return 1
	}
	req := &wire.SpawnRequest{Home: dir, Tmp: dir, EgressPort: egress}
	rules, err := newRules()
	if err == nil {
		err = restrictFS(req, rules, ws, &wire.Ready{})
	}
	if err != nil {
		fmt.Println("restrict", err)
		return 1
	}
	lo := [4]byte{127, 0, 0, 1}
	for _, c := range []struct {
		name string
		try  func(fd int) error
	}{
		{"connect", func(fd int) error { return unix.Connect(fd, &unix.SockaddrInet4{Port: allowed, Addr: lo}) }},
		{"connect_other", func(fd int) error { return unix.Connect(fd, &unix.SockaddrInet4{Port: other, Addr: lo}) }},
		{"bind", func(fd int) error { return unix.Bind(fd, &unix.SockaddrInet4{Addr: lo}) }},
	} {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			fmt.Println("socket", err)
			return 1
		}
		say(c.name, c.try(fd))
		unix.Close(fd)
	}
	return 0
}
