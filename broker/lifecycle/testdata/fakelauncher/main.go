// Command fakelauncher is a TEST-ONLY stand-in for the launcher that
// enforces nothing: it speaks the launcher protocol (one SpawnRequest in,
// Ready out, Proceed in, then exec) so that lifecycle's supervision logic
// can be tested on its own. It must never be installed or used outside
// lifecycle's tests; the real launcher's tests live in integration/.
package main

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"warrant/wire"
)

func main() {
	buf := make([]byte, wire.MaxLauncherFrame+8)
	oob := make([]byte, unix.CmsgSpace(5*4))
	n, oobn, _, _, err := unix.Recvmsg(3, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		os.Exit(120)
	}
	m, err := wire.DecodeFrame(buf[:n], wire.MaxLauncherFrame, wire.SpawnChannel)
	if err != nil {
		os.Exit(121)
	}
	req := m.(*wire.SpawnRequest)
	msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
	fds, _ := unix.ParseUnixRights(&msgs[0])
	if req.Argv[0] == "refuse" {
		reply(&wire.Refused{Code: wire.CodeIdentityDrift, Detail: "fake refusal"})
		os.Exit(125)
	}
	unix.CloseOnExec(3)
	unix.Setsid()
	unix.Dup2(fds[1], 1)
	unix.Dup2(fds[2], 2)
	env := make([]string, 0, len(req.Env))
	for _, kv := range req.Env {
		env = append(env, kv.Name+"="+kv.Value)
	}
	executed := req.Executable.SHA256
	if req.Argv[0] == "lie" { // reports bytes other than the approved ones
		executed = make([]byte, 32)
		executed[0] = 1
	}
	// A filter that allows everything, loaded only for its listener: the
	// broker takes the listener sent with Ready, as from the real launcher.
	unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	allow := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}}
	prog := unix.SockFprog{Len: 1, Filter: &allow[0]}
	listener, _, _ := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER,
		uintptr(unsafe.Pointer(&prog)))
	reply(&wire.Ready{SeccompDigest: make([]byte, 32), Binding: wire.SealedSnapshot,
		ExecutedSHA256: executed, Workspace: req.Workspace, Cwd: req.Cwd}, int(listener))
	unix.Close(int(listener))
	// Like the real launcher, it executes only after the broker's Proceed.
	n, _, _, _, err = unix.Recvmsg(3, buf, nil, 0)
	if err != nil {
		os.Exit(122)
	}
	if m, err := wire.DecodeFrame(buf[:n], wire.MaxLauncherFrame, wire.SpawnChannel); err != nil || m.Type() != wire.TypeProceed {
		reply(&wire.ExecFailed{Errno: uint32(unix.EPROTO)})
		os.Exit(127)
	}
	err = unix.Exec(req.Executable.Path, req.Argv, env)
	reply(&wire.ExecFailed{Errno: uint32(err.(unix.Errno))})
	os.Exit(127)
}

func reply(m wire.Message, fds ...int) {
	b, _ := wire.EncodeFrame(m)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	unix.Sendmsg(3, b, oob, nil, 0)
}
