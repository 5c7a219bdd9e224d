// Package proctable reads the machine's process table: each process's parent, group,
// command name, start time and, for a zombie, how it ended. On Linux it reads
// /proc/PID/stat, which needs no kernel option; elsewhere it says it cannot
// ([ErrUnsupported]) and callers do without. The guardian uses it to find the orphans
// it adopted, repl to find the processes an interrupted cell started and to name
// those that ended (docs/contract.md §5.6, §5.9). It starts and signals nothing.
package proctable
