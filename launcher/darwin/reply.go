package darwin

import (
	"unicode/utf8"

	"warrant/wire"
)

// Exit statuses of the launcher process. The broker decides from the reply
// and from EOF, never from these; they only keep a refusal from looking
// like a target's own exit status to a human reading ps.
const (
	exitRefused    = 125 // nothing was executed
	exitExecFailed = 126 // every check passed; execve returned an error
)

// maxDetail keeps a Refused detail under wire's cap for human sentences
// even when it quotes a long path.
const maxDetail = 4000

// refused turns a refusal into its reply, clipping the sentence on a UTF-8
// boundary.
func refused(e *wire.Error) *wire.Refused {
	d := e.Message
	if len(d) > maxDetail {
		d = d[:maxDetail]
		for !utf8.ValidString(d) {
			d = d[:len(d)-1]
		}
		d += "…"
	}
	return &wire.Refused{Code: e.Code, Detail: d}
}
