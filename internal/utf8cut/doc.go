// Package utf8cut cuts text at a byte limit without splitting a UTF-8 sequence: the
// one such cut every layer shares (repl's bounds on a result, the server's texts, the
// transports' messages about what they discarded). It is a leaf, importing nothing of
// the module, so that the transports can bound a message without importing repl.
// docs/design.md ("Layout") places it among the packages.
package utf8cut
