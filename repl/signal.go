package repl

import "syscall"

const sigint = syscall.SIGINT
