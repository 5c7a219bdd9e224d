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

func descendants(int) ([]procID, error) { return nil, errNoProcfs }

func (procID) alive() bool { return false }

func (procID) kill() {}

func loadAverage() (string, error) { return "", errNoProcfs }
