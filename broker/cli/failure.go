package cli

import (
	"errors"

	"warrant/wire"
)

// failureWords is a failure as a command says it to a person: a refusal
// as its code and sentence (an INTERNAL one plainly), any other error in
// the system's words (systemWords). printAccount adds, under --debug,
// the system's own account behind those words.
func failureWords(err error) string {
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Code.String() + ": " + plainly(we.Code.String(), we.Message)
	}
	return printable(systemWords(err))
}

// printAccount prints, under --debug only, the system's own account of a
// failure failureWords said: a refusal's detail, an error's chain.
func (e *Env) printAccount(err error) {
	var we *wire.Error
	if errors.As(err, &we) {
		e.printDetail(we)
	} else if systemWords(err) != err.Error() {
		e.PrintCause(err)
	}
}
