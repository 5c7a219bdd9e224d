package server

import (
	"context"
	"errors"

	"github.com/iota-uz/repl-mcp/repl"
)

var errNoSessionStore = errors.New("this result has no session's artifact store to keep it in")

// keepText is the I/O a text-form result may need before it is presented: when
// its text cuts what no artifact holds, the complete text is kept as an artifact of
// the routed session sess (repl.Session.KeepText), once per run for an execution
// result, so that every read of the run names the same one. The text itself, made
// after (present), only names what was kept. nil when the text needs nothing kept.
func keepText(ctx context.Context, sess *repl.Session, value any) *keptText {
	var res *repl.Result // whose complete text it is, once per run
	if e, ok := value.(execution); ok {
		res = e.Result
	}
	text := presentation(value).completeText()
	if text == "" {
		return nil
	}
	if sess == nil {
		return &keptText{err: errNoSessionStore}
	}
	ref, err := sess.KeepText(ctx, res, text)
	if err != nil {
		return &keptText{err: err}
	}
	return &keptText{ref: ref, session: sess.ID()}
}
