package wire

import (
	"fmt"

	"warrant/internal/closed"
)

// Code is a stable error code (docs/architecture.md §4). Every refusal carries one,
// with a human sentence beside it. The set is closed: a code not listed here
// does not decode.
type Code uint8

// The stable error codes.
const (
	CodeArgumentsInvalid Code = iota + 1
	CodePathInvalid
	CodeExecutableNotFound
	CodeApprovalRequired
	CodeApprovalDenied
	CodeLeaseExpired
	CodeLeaseExhausted
	CodeLeaseRevoked
	CodeGoalRevisionMismatch
	CodeGoalInactive
	CodeIdentityDrift
	CodeSandboxUnavailable
	CodeBusy
	CodeTimeout
	CodeOutputLimit
	CodeCancelled
	CodeUnknownOutcome
	CodeEvidenceBlocked
	CodeIOFailed
	CodeInternal
	CodeWorkspaceAliased
	// CodeMemoryLimit: the kernel killed a process of the action at its
	// memory limit (the cgroup's oom_kill counter rose); the outcome is
	// still what was observed (signaled, or exited when the root
	// survived).
	CodeMemoryLimit
	// CodeStepBlocked: a submit names a goal step whose dependencies are
	// not VERIFIED_DONE under the goal's current revision; nothing was
	// asked, consumed or started.
	CodeStepBlocked
)

var codeNames = []string{"",
	"ARGUMENTS_INVALID", "PATH_INVALID", "EXECUTABLE_NOT_FOUND",
	"APPROVAL_REQUIRED", "APPROVAL_DENIED", "LEASE_EXPIRED",
	"LEASE_EXHAUSTED", "LEASE_REVOKED", "GOAL_REVISION_MISMATCH",
	"GOAL_INACTIVE", "IDENTITY_DRIFT", "SANDBOX_UNAVAILABLE", "BUSY",
	"TIMEOUT", "OUTPUT_LIMIT", "CANCELLED", "UNKNOWN_OUTCOME",
	"EVIDENCE_BLOCKED", "IO_FAILED", "INTERNAL", "WORKSPACE_ALIASED",
	"MEMORY_LIMIT", "STEP_BLOCKED",
}

func (c Code) names() []string                  { return codeNames }
func (c Code) String() string                   { return closed.String(codeNames, c) }
func (c Code) MarshalText() ([]byte, error)     { return closed.Marshal(codeNames, c) }
func (c *Code) UnmarshalText(text []byte) error { return closed.Unmarshal(codeNames, text, c) }

// Error is a refusal or failure with a stable code and a human sentence.
// It is both a Go error and a wire value. Message says in the user's words
// what is wrong and how to fix it; Detail, when set, is the system's own
// account of the cause (a Go error chain such as "openat2 x: no such file
// or directory"), which the CLI shows only under --debug.
type Error struct {
	Code    Code   `cbor:"code"`
	Message string `cbor:"message"`
	Detail  string `cbor:"detail,omitempty"`
}

// Errorf returns an *Error with code c and a formatted sentence.
func Errorf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// Explain returns an *Error with code c, a formatted sentence and cause
// as its Detail.
func Explain(c Code, cause error, format string, args ...any) *Error {
	e := Errorf(c, format, args...)
	if cause != nil {
		e.Detail = cause.Error()
	}
	return e
}

func (e *Error) Error() string { return e.Code.String() + ": " + e.Message }

func (e *Error) validate() error {
	return firstErr(checkEnum(e.Code), checkText("message", e.Message, maxText), checkText("detail", e.Detail, maxText))
}

// Type implements Message.
func (*Error) Type() MsgType { return TypeError }
