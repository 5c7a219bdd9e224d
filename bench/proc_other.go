//go:build !linux

package main

// memStat is a process's resident set, now and at its peak.
type memStat struct {
	rss, hwm uint64 // bytes
}

func readMem(int) (memStat, error) { return memStat{}, errNoProcfs }

// procID names one process instance.
type procID struct {
	pid   int
	pgid  int
	start uint64
	comm  string
}

// procStat is the part of a process's status the bench needs.
type procStat struct {
	procID
	state byte
	ppid  int
}

func readStat(int) (procStat, error) { return procStat{}, errNoProcfs }

func descendants(int) ([]procID, error) { return nil, errNoProcfs }

func (procID) alive() bool { return false }

func (procID) kill() {}

func loadAverage() (string, error) { return "", errNoProcfs }
