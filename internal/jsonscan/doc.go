// Package jsonscan reads the top level of JSON documents that are already known to
// be valid, without decoding what it does not need: the members of an object as raw
// bytes, and strings that need no unescaping. The server's hot paths (the worker's
// rpc frames, a peer's responses, an op's names) use it ahead of encoding/json, and
// fall back to encoding/json for anything it declines. It owns no state.
//
// docs/design.md ("Layout") places it among the packages.
package jsonscan
