package main

import "golang.org/x/sys/unix"

// The ioctls that read and set a terminal's attributes (holdTypeahead).
const getTermios, setTermios = unix.TCGETS, unix.TCSETS
