// Package artifactref declares the reference to an artifact (docs/contract.md §3.9)
// and its formats: the one type every package that hands a reference on shares. The
// store (package artifacts) makes references, the worker carries them back in its
// results, package repl holds them in a run's result and package server names them
// in its texts. It is a leaf, importing nothing of the module, so that repl can hold a
// reference without importing the store, as io/fs lets packages share os.FileMode:
// package artifacts declares its Ref and Format as aliases of these.
//
// It owns no behaviour beyond a format's validity; what an artifact is, and its
// bounds, are the store's. docs/design.md ("Layout") places it among the packages.
package artifactref
