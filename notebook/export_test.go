package notebook

// NewKeeperWithLimits is New with lower bounds, for the tests of eviction.
func NewKeeperWithLimits(cfg Config, cells int, bytes int64) (*Keeper, error) {
	return newKeeper(cfg, limits{cells: cells, bytes: bytes})
}

// Dir is the keeper's own directory of records.
func (k *Keeper) Dir() string { return k.dir }

// Flush waits for the record work handed over so far, as an export does.
func (k *Keeper) Flush() { k.flush() }

// SetLiveHook has liveLoop call hook before each live write; set it before the
// first cell.
func (k *Keeper) SetLiveHook(hook func()) { k.liveHook = hook }

// SweepLiveTemps is the sweep a new keeper makes of its live directory.
var SweepLiveTemps = sweepLiveTemps
