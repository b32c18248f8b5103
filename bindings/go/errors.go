package mnem

import (
	"errors"
	"strings"
)

// Status is a mnem_status code. Values are fixed by the C ABI (append-only).
// A Status is itself an error, so the sentinels below work with errors.Is.
type Status int32

const (
	StatusOK              Status = 0
	StatusInvalidArgument Status = 1
	StatusBufferTooSmall  Status = 2
	StatusNotFound        Status = 3
	StatusBusy            Status = 4
	StatusReadOnly        Status = 5
	StatusIO              Status = 6
	StatusCorruption      Status = 7
	StatusIncompatible    Status = 8
	StatusEmbedderFailed  Status = 9
	StatusInternal        Status = 100
)

// Sentinels for errors.Is(err, mnem.ErrBusy) and friends.
var (
	ErrInvalidArgument error = StatusInvalidArgument
	ErrBufferTooSmall  error = StatusBufferTooSmall
	ErrNotFound        error = StatusNotFound
	ErrBusy            error = StatusBusy
	ErrReadOnly        error = StatusReadOnly
	ErrIO              error = StatusIO
	ErrCorruption      error = StatusCorruption
	ErrIncompatible    error = StatusIncompatible
	ErrEmbedderFailed  error = StatusEmbedderFailed
	ErrInternal        error = StatusInternal

	// ErrClosed is returned by every method of a Store after Close.
	ErrClosed = errors.New("mnem: store is closed")
)

// String returns the same name as mnem_status_name.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "OK"
	case StatusInvalidArgument:
		return "INVALID_ARGUMENT"
	case StatusBufferTooSmall:
		return "BUFFER_TOO_SMALL"
	case StatusNotFound:
		return "NOT_FOUND"
	case StatusBusy:
		return "BUSY"
	case StatusReadOnly:
		return "READ_ONLY"
	case StatusIO:
		return "IO"
	case StatusCorruption:
		return "CORRUPTION"
	case StatusIncompatible:
		return "INCOMPATIBLE"
	case StatusEmbedderFailed:
		return "EMBEDDER_FAILED"
	case StatusInternal:
		return "INTERNAL"
	}
	return "UNKNOWN"
}

func (s Status) Error() string { return "mnem: " + s.String() }

// Error is a failed call: the status and the library's message.
// errors.Is(err, mnem.ErrNotFound) matches on Status.
type Error struct {
	Op      string // the C function without its "mnem_" prefix, e.g. "open"
	Status  Status
	Message string
	// Cause is the error an embedder given to this call returned, when the
	// status is StatusEmbedderFailed because of it (else nil).
	Cause error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("mnem: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(e.Status.String())
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap exposes the Status, and the Cause when there is one, so errors.Is
// works against the sentinels and against an embedder's own errors.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Status, e.Cause}
	}
	return []error{e.Status}
}

func invalidArg(op, msg string) *Error {
	return &Error{Op: op, Status: StatusInvalidArgument, Message: msg}
}
