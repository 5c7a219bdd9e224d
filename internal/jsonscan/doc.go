// Package jsonscan reads the top level of JSON documents that are already known to
// be valid, without decoding what it does not need: the members of an object as raw
// bytes, and strings that need no unescaping. The server's hot paths (a peer's
// responses, the ids of requests, an op's names) use it ahead of encoding/json, and
// fall back to encoding/json for anything it declines. It owns no state. What it
// saves is measured in docs/design.md, "Fast paths, and what each saves".
//
// docs/design.md ("Layout") places it among the packages.
package jsonscan
