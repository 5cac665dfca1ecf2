package ipc

import "syscall"

// errTooManyOpenFiles is retried by Serve rather than ending it.
var errTooManyOpenFiles = syscall.EMFILE
