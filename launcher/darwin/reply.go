package darwin

import (
	"unicode/utf8"

	"warrant/wire"
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
