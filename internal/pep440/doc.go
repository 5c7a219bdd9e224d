// Package pep440 normalizes versions to PEP 440's form (3.2.0-rc.1 to 3.2.0rc1, a
// development build's 0.1.0.dev20261201135254+ge0c66b0d7aaf.dirty kept as it is).
//
// It is a package of its own, apart from internal/wheel, because the server binary
// needs it (internal/buildversion, for the version a build reports) and the wheel
// format's code (TOML, zip, ELF and Mach-O readers) must stay out of that binary: its
// pages are part of the server's idle memory (docs/design.md, "Performance targets").
// Its patterns are compiled on first use, not at package init, so that a process that
// never asks (the guardian, a server stamped with its version) does not pay for them.
package pep440
