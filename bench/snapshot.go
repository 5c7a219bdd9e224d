package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The snapshot figures (issue 32, point 7; docs/contract.md §6.7), each beside a
// baseline of the same run:
//   - a pass of a 1 GiB pandas DataFrame, and of 10,000 small variables, as the worker
//     reports it (took_ms), against the same objects pickled (protocol 5, out-of-band
//     buffers) into one file and fsynced, timed in a cell;
//   - python_session_restore of each, against pickle.load of that file in a cell;
//   - a trivial cell with snapshots on, against the same cell in a server with
//     --no-snapshot, interleaved (target: the ratio within the noise);
//   - a trivial cell that arrives while a pass writes the 1 GiB frame, against the same
//     cell in the same server when it is idle (target: at most 50 ms later).
//
// They need pandas and numpy: the bench's -python when it has them, else the data
// venv's (interop/.venv-data, `make data-deps`). Their servers keep their snapshots in
// the bench's scratch directory, never in the user's state directory.
const (
	snapFrameRows    = 1 << 23 // 8,388,608 rows of 16 float64: 1 GiB
	snapSmallVars    = 10_000
	snapCells        = 60 // trivial cells per server, on and off
	snapDuringRounds = 5
	snapPassWait     = 120 * time.Second
	snapLateTarget   = 50 * time.Millisecond
	snapCellTimeout  = 300 * time.Second
)

// snapshotFigure is the snapshot figures' measurements.
type snapshotFigure struct {
	python string // the interpreter that ran them
	// The 1 GiB frame and the 10,000 variables: the pass and the restore, and their
	// baselines (a bare pickle dump and load of the same objects).
	frameSave, frameDump, frameRestore, frameLoad time.Duration
	smallSave, smallDump, smallRestore, smallLoad time.Duration
	on, off                                       []time.Duration // trivial cells, snapshots on and off
	during, idle                                  []time.Duration // a cell during a pass, and idle
	err                                           error
}

// pickleCode times a bare pickle of the namespace's variables names into one file,
// fsynced, and prints the seconds; loadCode times loading them back.
const pickleCode = `import pickle, os, time
__t = time.perf_counter()
__bufs = []
with open(%[1]q, 'wb') as __f:
    pickle.dump({n: globals()[n] for n in %[2]s}, __f, protocol=5, buffer_callback=__bufs.append)
    __inband = __f.tell()
    for __b in __bufs:
        __f.write(__b.raw())
    __f.flush(); os.fsync(__f.fileno())
__sizes = [len(b.raw()) for b in __bufs]
del __bufs, __f
time.perf_counter() - __t`

const loadCode = `import pickle, time
__t = time.perf_counter()
with open(%[1]q, 'rb') as __f:
    __head = __f.read(__inband)
    __loaded = pickle.loads(__head, buffers=[bytearray(__f.read(n)) for n in __sizes])
del __loaded, __head, __f
time.perf_counter() - __t`

// measureSnapshots runs the snapshot figures.
func (b *bench) measureSnapshots(ctx context.Context) (f snapshotFigure) {
	if f.python, f.err = b.dataPython(ctx); f.err != nil {
		return f
	}
	on, err := b.snapshotServer(ctx, "state-on")
	if err != nil {
		f.err = err
		return f
	}
	defer b.stopServer(on.mcpServer, "snapshot session")
	off, err := b.snapshotServer(ctx, "", "--no-snapshot")
	if err != nil {
		f.err = err
		return f
	}
	defer b.stopServer(off.mcpServer, "no-snapshot session")
	for _, s := range []*snapServer{on, off} {
		if _, _, err := s.execute(ctx, trivialCode, cellTimeout); err != nil {
			f.err = fmt.Errorf("first cell: %w", err)
			return f
		}
	}
	for i := 0; i < snapCells; i++ { // interleaved, so that both meet the same load
		for _, s := range []*snapServer{on, off} {
			_, took, err := s.execute(ctx, trivialCode, cellTimeout)
			if err != nil {
				f.err = err
				return f
			}
			if s == on {
				f.on = append(f.on, took)
			} else {
				f.off = append(f.off, took)
			}
		}
	}
	small := fmt.Sprintf("for __i in range(%d):\n    globals()[f'v{__i}'] = {'i': __i, 's': 'x' * 20}", snapSmallVars)
	names := fmt.Sprintf("[f'v{i}' for i in range(%d)]", snapSmallVars)
	if f.smallSave, f.smallDump, f.smallRestore, f.smallLoad, f.err = b.saveAndRestore(ctx, on, small, names); f.err != nil {
		f.err = fmt.Errorf("10,000 variables: %w", f.err)
		return f
	}
	frame := fmt.Sprintf("import numpy as np, pandas as pd\ndf = pd.DataFrame(np.random.default_rng(1).random((%d, 16)))", snapFrameRows)
	if f.frameSave, f.frameDump, f.frameRestore, f.frameLoad, f.err = b.saveAndRestore(ctx, on, frame, "['df']"); f.err != nil {
		f.err = fmt.Errorf("1 GiB DataFrame: %w", f.err)
		return f
	}
	f.during, f.idle, f.err = on.cellsDuringPasses(ctx)
	return f
}

// dataPython is an interpreter with numpy and pandas: -python, else the data venv's.
func (b *bench) dataPython(ctx context.Context) (string, error) {
	candidates := []string{b.cfg.Python}
	if venv, err := filepath.Abs(filepath.Join("interop", ".venv-data", "bin", "python")); err == nil {
		candidates = append(candidates, venv)
	}
	for _, python := range candidates {
		if _, err := output(ctx, python, "-c", "import numpy, pandas"); err == nil {
			return python, nil
		}
	}
	return "", fmt.Errorf("no interpreter with numpy and pandas (%s): run make data-deps", strings.Join(candidates, ", "))
}

// snapServer is a server of the snapshot figures, with the interpreter that has pandas.
type snapServer struct{ *mcpServer }

// snapshotServer starts a server on the data interpreter, its state directory state
// under the bench's scratch directory ("" for none, with --no-snapshot).
func (b *bench) snapshotServer(ctx context.Context, state string, args ...string) (*snapServer, error) {
	python, err := b.dataPython(ctx)
	if err != nil {
		return nil, err
	}
	if state != "" {
		args = append(args, "--snapshot-dir", filepath.Join(b.dir, state), "--snapshot-max-mib", "4096")
	} else {
		args = append(args, "--snapshot-dir", filepath.Join(b.dir, "state-off"))
	}
	cmd := exec.Command(b.cfg.Binary, append([]string{"--python", python, "--no-spare-worker"}, args...)...)
	cmd.Dir = b.dir
	c, err := startPiped(ctx, "repl-mcp", cmd)
	if err != nil {
		return nil, err
	}
	s := &snapServer{&mcpServer{child: c}}
	if _, err := s.initialize(ctx); err != nil {
		c.stop()
		return nil, err
	}
	return s, nil
}

// saveAndRestore makes the variables in a new worker (reset=True: only them), waits for
// their pass, times a bare pickle of the same objects into a file and its load, then
// resets and restores.
func (b *bench) saveAndRestore(ctx context.Context, s *snapServer, create, names string) (save, dump, restore, load time.Duration, err error) {
	before, err := s.health(ctx)
	if err != nil {
		return
	}
	if err = s.resetCell(ctx, create); err != nil {
		return
	}
	if save, err = s.waitSaved(ctx, before.Structured.Server.Snapshot.SavedAt); err != nil {
		return
	}
	file := filepath.Join(b.dir, "bare.pickle")
	defer os.Remove(file)
	if dump, err = s.seconds(ctx, fmt.Sprintf(pickleCode, file, names)); err != nil {
		return
	}
	if load, err = s.seconds(ctx, fmt.Sprintf(loadCode, file)); err != nil {
		return
	}
	if _, _, err = s.execute(ctx, "1", cellTimeout); err != nil {
		return
	}
	if err = s.resetCell(ctx, "1"); err != nil {
		return
	}
	start := time.Now()
	res, _, err := s.request(ctx, snapCellTimeout, "tools/call", map[string]any{"name": "python_session_restore", "arguments": map[string]any{"timeout": snapCellTimeout.Seconds()}})
	restore = time.Since(start)
	if err == nil {
		var r struct {
			IsError bool `json:"isError"`
		}
		if json.Unmarshal(res, &r) != nil || r.IsError {
			err = fmt.Errorf("python_session_restore: %.300s", res)
		}
	}
	return
}

// resetCell runs code in a new worker (reset=True); it must succeed.
func (s *snapServer) resetCell(ctx context.Context, code string) error {
	res, _, err := s.request(ctx, snapCellTimeout+cellSlack, "tools/call", map[string]any{"name": "execute_python",
		"arguments": map[string]any{"code": code, "reset": true, "timeout": snapCellTimeout.Seconds()}})
	if err != nil {
		return err
	}
	var r cellResult
	if json.Unmarshal(res, &r) != nil || r.IsError || !r.Structured.Success {
		return fmt.Errorf("reset cell %.40q did not succeed: %.300s", code, res)
	}
	return nil
}

// seconds runs a cell whose value is seconds it measured itself.
func (s *snapServer) seconds(ctx context.Context, code string) (time.Duration, error) {
	r, _, err := s.execute(ctx, code, snapCellTimeout)
	if err != nil {
		return 0, err
	}
	var secs float64
	if r.Structured.ReturnValue == nil || json.Unmarshal([]byte(*r.Structured.ReturnValue), &secs) != nil {
		return 0, errors.New("the cell did not return its seconds")
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// health is what the figures read of python_health: the default session's snapshot.
type snapHealth struct {
	Structured struct {
		Server struct {
			Snapshot struct {
				Status  string  `json:"status"`
				SavedAt string  `json:"saved_at"`
				TookMS  float64 `json:"took_ms"`
				Error   string  `json:"error"`
			} `json:"snapshot"`
		} `json:"server"`
	} `json:"structuredContent"`
}

func (s *snapServer) health(ctx context.Context) (snapHealth, error) {
	var h snapHealth
	res, _, err := s.request(ctx, requestTimeout, "tools/call", map[string]any{"name": "python_health", "arguments": map[string]any{}})
	if err == nil {
		err = json.Unmarshal(res, &h)
	}
	return h, err
}

// waitSaved waits for a pass saved after the one saved at before (its saved_at; "" for
// none) and returns how long it took.
func (s *snapServer) waitSaved(ctx context.Context, before string) (time.Duration, error) {
	deadline := time.Now().Add(snapPassWait)
	for time.Now().Before(deadline) {
		h, err := s.health(ctx)
		if err != nil {
			return 0, err
		}
		switch sn := h.Structured.Server.Snapshot; sn.Status {
		case "saved":
			if sn.SavedAt == before {
				break // the earlier snapshot: the new pass has not begun
			}
			return time.Duration(sn.TookMS * float64(time.Millisecond)), nil
		case "failed":
			return 0, errors.New("the snapshot failed: " + sn.Error)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("no snapshot saved within %v", snapPassWait)
}

// cellsDuringPasses changes the 1 GiB frame, waits until its pass writes, and times a
// trivial cell then; beside each, the same cell once the server is idle again.
func (s *snapServer) cellsDuringPasses(ctx context.Context) (during, idle []time.Duration, err error) {
	for i := 0; i < snapDuringRounds; i++ {
		if _, _, err = s.execute(ctx, "df.iloc[0, 0] += 1", cellTimeout); err != nil {
			return
		}
		for {
			h, herr := s.health(ctx)
			if herr != nil {
				return nil, nil, herr
			}
			if h.Structured.Server.Snapshot.Status == "saving" {
				break
			}
			if err = sleep(ctx, 20*time.Millisecond); err != nil {
				return
			}
		}
		if err = sleep(ctx, 300*time.Millisecond); err != nil { // well into the pass's gigabyte
			return
		}
		_, took, cerr := s.execute(ctx, trivialCode, cellTimeout)
		if cerr != nil {
			return nil, nil, cerr
		}
		during = append(during, took)
		_, took, cerr = s.execute(ctx, trivialCode, cellTimeout) // the pass stopped: idle
		if cerr != nil {
			return nil, nil, cerr
		}
		idle = append(idle, took)
	}
	return during, idle, nil
}

// snapshotRows are the snapshot figures' rows.
func (r *report) snapshotRows(f snapshotFigure) {
	if f.err != nil || f.python == "" || len(f.on) == 0 || len(f.during) == 0 {
		// Failed, or never run (a figure with no samples measured nothing).
		r.rows = append(r.rows, row{figure: "snapshots (issue 32)", value: notMeasured(f.err), target: "-"})
		return
	}
	pair := func(figure string, value, base time.Duration, baseText string) {
		ratio := "-"
		if base > 0 {
			ratio = fmtRatio(durRatio(value, base))
		}
		r.rows = append(r.rows, row{figure: figure, value: fmtDur(value), baseline: fmtDur(base) + " " + baseText, ratio: ratio, target: "-"})
	}
	pair("snapshot pass, 1 GiB DataFrame", f.frameSave, f.frameDump, "bare pickle + fsync")
	pair("restore, 1 GiB DataFrame (python_session_restore)", f.frameRestore, f.frameLoad, "bare pickle load")
	pair("snapshot pass, 10,000 small variables", f.smallSave, f.smallDump, "bare pickle + fsync")
	pair("restore, 10,000 small variables", f.smallRestore, f.smallLoad, "bare pickle load")
	on, off := percentile(f.on, 50), percentile(f.off, 50)
	r.rows = append(r.rows, row{figure: "trivial cell, snapshots on, p50", value: fmtDur(on), baseline: fmtDur(off) + " --no-snapshot p50",
		ratio: fmtRatio(durRatio(on, off)), target: "~1x (noise)"})
	during, idle := percentile(f.during, 50), percentile(f.idle, 50)
	late := during - idle
	r.rows = append(r.rows, row{figure: "cell arriving during a 1 GiB pass, p50", value: fmtDur(during), baseline: fmtDur(idle) + " idle p50",
		ratio: "+" + fmtDur(late), target: "<= +" + fmtDur(snapLateTarget), met: yesNo(late <= snapLateTarget)})
}

// snapshotDetails says how the snapshot figures were measured.
func snapshotDetails(f snapshotFigure) []string {
	if f.err != nil || f.python == "" {
		return nil
	}
	d := []string{fmt.Sprintf("snapshots: interpreter %s; servers with --no-spare-worker and a state directory in the scratch directory, --snapshot-max-mib 4096", f.python),
		"snapshot pass: took_ms the worker reports for the pass after the cell that made the variables (health); baseline: the same objects pickled with protocol 5 " +
			"and out-of-band buffers into one file, fsynced, timed in a cell; restore: python_session_restore's round trip after reset=True; baseline: that file loaded in a cell",
		fmt.Sprintf("trivial cells: %d in each server, alternating: on %s; off %s", snapCells, spread(f.on), spread(f.off)),
		fmt.Sprintf("cells during a pass: %d rounds of df.iloc[0, 0] += 1, python_health until the pass saves, 300 ms more, a trivial cell; then one more, idle: during %s; idle %s",
			snapDuringRounds, spread(f.during), spread(f.idle)),
	}
	return d
}
