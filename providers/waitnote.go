package providers

import (
	"context"
	"errors"
)

// ErrNotTakenUp is wrapped, beside ErrOutcomeUnknown, by RunNodeSteps' errors when the
// node's executor never took up the steps handed to it (an agent that is not running):
// nothing on the node started, though the hand-over stays and may start when the
// executor comes back.
var ErrNotTakenUp = errors.New("the node's executor never took up the update")

type waitNoteKey struct{}

// WithWaitNote returns ctx carrying note, which a provider calls (through WaitNote) while
// RunNodeSteps waits on a node's executor, to say what it waits for when that is worth
// saying — an agent that has not taken up its update, and when it then does. For people
// only: nothing decides on it.
func WithWaitNote(ctx context.Context, note func(string)) context.Context {
	return context.WithValue(ctx, waitNoteKey{}, note)
}

// WaitNote passes msg to the note ctx carries, if any.
func WaitNote(ctx context.Context, msg string) {
	if note, ok := ctx.Value(waitNoteKey{}).(func(string)); ok && note != nil {
		note(msg)
	}
}
