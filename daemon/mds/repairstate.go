package mds

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"syscall"

	"github.com/strata-hpc/strata/layout"
)

// The durable state of failure handling, part of the FSM so that a new
// leader resumes where the old one stopped:
//
//   - stale: per file, the components of its current generation that must
//     not be read (a write, truncate or commit failed on them, or a read or
//     the scrubber found a corrupt block). LAYOUTGET hands the set out;
//     clients read around them and skip them when writing. The rebuild
//     manager recreates them and clears the mark.
//   - rebuilds: per component being rebuilt, the target the leader chose
//     (rebuildStartCmd), so that a partial component left on it by a
//     leader that died is rewritten or collected, never leaked.
//   - strays: components displaced by a rebuild or drain (the old copy on
//     a data server that was down, or the moved-away copy of a drained
//     one), removed by the leader once no capability that could still read
//     them is valid: CapabilityTTL after Since.
//   - draining: data servers that get no new placements and whose
//     components the rebuild manager moves away.
//   - damaged: components in which scrub found blocks failing their
//     checksum. The rebuild manager repairs the blocks of a file with
//     redundancy in place and drops the record; a file without redundancy
//     has nothing to repair them from: reads of those blocks fail with EIO
//     and `strata admin scrub status` lists them as unrecoverable.
//
// Copy-on-write: a snapshot shares the maps' values, so every change
// stores a new value and never modifies one in place.
type repairState struct {
	stale    map[uint64]staleEntry
	rebuilds map[compKey]rebuildIntent
	strays   map[strayKey]int64 // -> Since, unix nanoseconds
	draining map[string]bool
	damaged  map[damagedKey]damagedRecord

	// The write-grant horizon (stale.go): no write capability granted by
	// the leader of term horizonTerm or earlier expires after grantsUntil,
	// none granted before term horizonTerm after prevUntil (unix
	// nanoseconds).
	grantsUntil int64
	horizonTerm uint64
	prevUntil   int64
}

// compKey names one component of a file's current layout.
type compKey struct {
	Ino  uint64
	Comp uint32
}

// staleEntry is the stale components of one generation of a file, in
// component order, each with why it was marked.
type staleEntry struct {
	Ino   uint64
	Gen   uint64
	Comps []staleComp
}

// staleComp is one stale component and the reason it was marked: the
// failed operation (write, truncate, commit, read) or "scrub".
type staleComp struct {
	Comp   uint32
	Reason string
}

// has reports whether component comp is stale.
func (e staleEntry) has(comp uint32) bool {
	return slices.ContainsFunc(e.Comps, func(c staleComp) bool { return c.Comp == comp })
}

// set returns the stale components as a set.
func (e staleEntry) set() map[uint32]bool {
	m := make(map[uint32]bool, len(e.Comps))
	for _, c := range e.Comps {
		m[c.Comp] = true
	}
	return m
}

// rebuildIntent is a component being rebuilt onto To by the leader of
// Term. Done is how far the copy on To is complete and durable (a multiple
// of the rebuild window): a later attempt onto the same target resumes
// there (appended later: an older record decodes with 0, a fresh start).
// Dirty is set when the file was granted for writing after the attempt
// began (rebuildResetCmd): the bytes on To may miss a write, so Done is 0
// and no progress is recorded until an attempt starts afresh.
type rebuildIntent struct {
	Ino   uint64
	Gen   uint64
	Comp  uint32
	To    string
	Term  uint64
	Done  uint64
	Dirty bool
}

// strayKey names a component on a data server that no layout uses.
type strayKey struct {
	Ino uint64
	Gen uint64
	Col uint32
	DS  string
}

// damagedKey names a component of a file's generation.
type damagedKey struct {
	Ino uint64
	Gen uint64
	Col uint32
}

// damagedRecord is a component with blocks of BlockSize bytes failing
// their checksum, found by scrub on data server DS.
type damagedRecord struct {
	Ino       uint64
	Gen       uint64
	Col       uint32
	DS        string
	Blocks    []uint64
	Found     int64
	BlockSize uint32
}

func newRepairState() repairState {
	return repairState{
		stale:    map[uint64]staleEntry{},
		rebuilds: map[compKey]rebuildIntent{},
		strays:   map[strayKey]int64{},
		draining: map[string]bool{},
		damaged:  map[damagedKey]damagedRecord{},
	}
}

// clone returns shallow copies of the maps, for a snapshot.
func (r repairState) clone() repairState {
	return repairState{
		stale:    maps.Clone(r.stale),
		rebuilds: maps.Clone(r.rebuilds),
		strays:   maps.Clone(r.strays),
		draining: maps.Clone(r.draining),
		damaged:  maps.Clone(r.damaged),

		grantsUntil: r.grantsUntil,
		horizonTerm: r.horizonTerm,
		prevUntil:   r.prevUntil,
	}
}

// staleOf returns the stale components of file n's current layout.
func (st *state) staleOf(n *inode) staleEntry {
	e, ok := st.rep.stale[n.Ino]
	if !ok || e.Gen != n.Layout.Generation {
		return staleEntry{}
	}
	return e
}

// recoverable reports whether a layout can serve every byte with the
// components in stale lost: at least one copy of every column of a
// mirror, at most M of an rs:K+M, none of a layout without redundancy.
func recoverable(l layout.Layout, stale map[uint32]bool) bool {
	switch l.Scheme.Kind {
	case layout.KindMirror:
		for col := 0; col < l.Width; col++ {
			ok := false
			for r := 0; r < l.Scheme.N; r++ {
				ok = ok || !stale[uint32(l.MirrorComponent(col, r))]
			}
			if !ok {
				return false
			}
		}
		return true
	case layout.KindRS:
		return len(stale) <= l.Scheme.M
	}
	return len(stale) == 0
}

// The commands of failure handling (see commands.go for their numbers).

// staleCmd marks components of generation Gen of file Ino stale. DS[i] is
// the data server the reporter found component Comps[i] on: a report about
// a component that has moved since is refused (ESTALE). With Strict the
// mark is refused (EIO) if the file could no longer serve every byte: a
// write that failed on too many components fails instead.
type staleCmd struct {
	Ino    uint64
	Gen    uint64
	Comps  []uint32
	DS     []string
	Reason string
	Strict bool
}

// rebuildStartCmd records that component Comp of file Ino (generation
// Gen, now on From) is being rebuilt onto To.
type rebuildStartCmd struct {
	Ino  uint64
	Gen  uint64
	Comp uint32
	From string
	To   string
	Now  int64
	Term uint64
	Done uint64 // the offset the copy resumes from (appended later: 0 in older entries)
}

// rebuildProgressCmd records that the copy of the leader of Term onto To
// is complete and durable up to Done. An old binary may skip it: it only
// spares a later attempt the bytes already copied.
type rebuildProgressCmd struct {
	Ino  uint64
	Gen  uint64
	Comp uint32
	To   string
	Term uint64
	Done uint64
}

// rebuildResetCmd forgets the progress of every rebuild of file Ino: the
// leader is about to grant it for writing (stale.go). An old binary may
// skip it: it records no progress either.
type rebuildResetCmd struct {
	Ino uint64
}

// rebuildDoneCmd swaps component Comp of file Ino from From to To (the
// rebuilt copy, committed on To), clears its stale mark and its intent,
// and makes the copy on From a stray if it moved.
type rebuildDoneCmd struct {
	Ino  uint64
	Gen  uint64
	Comp uint32
	From string
	To   string
	Now  int64
}

// rebuildAbortCmd drops the intent of component Comp of file Ino; a
// partial copy on its target becomes a stray.
type rebuildAbortCmd struct {
	Ino  uint64
	Comp uint32
	Now  int64
}

// repairForgetCmd drops the failure-handling state of files that were
// removed or given a new generation: their stale marks and damage records
// go, the targets of their rebuild intents become strays.
type repairForgetCmd struct {
	Inos []uint64
	Now  int64
}

// drainCmd starts (Drain) or stops draining data server ID.
type drainCmd struct {
	ID    string
	Drain bool
}

// strayPurgeCmd drops strays whose components are gone from their data
// servers.
type strayPurgeCmd struct {
	Keys []strayKey
}

// damagedCmd records what scrub found in a component: its corrupt blocks,
// or with Clear that it is clean again (scrub found it so, or the rebuild
// manager repaired it).
type damagedCmd struct {
	Rec     damagedRecord
	Clear   bool
	IfFound int64 // with Clear: only if the record is still the one found then (a repair's)
}

func (st *state) applyStale(c *staleCmd) result {
	n, l, err := st.currentLayout(c.Ino, c.Gen)
	if err != nil {
		return fail(err)
	}
	if len(c.DS) != len(c.Comps) {
		return fail(errf(syscall.EINVAL, "stale components of inode %d: %d components, %d data servers", c.Ino, len(c.Comps), len(c.DS)))
	}
	if l.Scheme.Kind == layout.KindNone {
		return fail(errf(syscall.EINVAL, "inode %d has layout %s: no redundancy to mark a component stale in", c.Ino, l))
	}
	old := st.staleOf(n)
	set := old.set()
	next := staleEntry{Ino: c.Ino, Gen: c.Gen, Comps: slices.Clone(old.Comps)}
	for i, comp := range c.Comps {
		if int(comp) >= len(l.Targets) {
			return fail(errf(syscall.EINVAL, "inode %d has %d components, not %d", c.Ino, len(l.Targets), comp+1))
		}
		if l.Targets[comp] != c.DS[i] {
			return fail(errf(syscall.ESTALE, "component %d of inode %d is on %s now, not %s", comp, c.Ino, l.Targets[comp], c.DS[i]))
		}
		if !set[comp] {
			set[comp] = true
			next.Comps = append(next.Comps, staleComp{Comp: comp, Reason: c.Reason})
		}
	}
	if c.Strict && !recoverable(l, set) {
		return fail(errf(syscall.EIO, "inode %d (%s): components %v failed, too many to lose: the file could not be read back", c.Ino, l, slices.Sorted(maps.Keys(set))))
	}
	slices.SortFunc(next.Comps, func(a, b staleComp) int { return cmp.Compare(a.Comp, b.Comp) })
	st.rep.stale[c.Ino] = next
	return result{}
}

// currentLayout returns file ino and its layout if gen is its generation.
func (st *state) currentLayout(ino, gen uint64) (*inode, layout.Layout, error) {
	n, err := st.node(ino)
	if err != nil {
		return nil, layout.Layout{}, err
	}
	if !n.isFile() {
		return nil, layout.Layout{}, errf(syscall.EINVAL, "inode %d is not a regular file", ino)
	}
	if n.Layout.Generation != gen {
		return nil, layout.Layout{}, errf(syscall.ESTALE, "inode %d has layout generation %d, not %d", ino, n.Layout.Generation, gen)
	}
	return n, n.Layout, nil
}

// checkMove validates moving component comp of layout l from from to to:
// from is where it is, to is not where another component is.
func checkMove(ino uint64, l layout.Layout, comp uint32, from, to string) error {
	if int(comp) >= len(l.Targets) {
		return errf(syscall.EINVAL, "inode %d has %d components, not %d", ino, len(l.Targets), comp+1)
	}
	if l.Targets[comp] != from {
		return errf(syscall.ESTALE, "component %d of inode %d is on %s now, not %s", comp, ino, l.Targets[comp], from)
	}
	for i, t := range l.Targets {
		if t == to && uint32(i) != comp {
			return errf(syscall.EEXIST, "inode %d already has component %d on %s", ino, i, to)
		}
	}
	return nil
}

func (st *state) applyRebuildStart(c *rebuildStartCmd) result {
	_, l, err := st.currentLayout(c.Ino, c.Gen)
	if err != nil {
		return fail(err)
	}
	if err := checkMove(c.Ino, l, c.Comp, c.From, c.To); err != nil {
		return fail(err)
	}
	k := compKey{Ino: c.Ino, Comp: c.Comp}
	if old, ok := st.rep.rebuilds[k]; ok && (old.To != c.To || old.Gen != c.Gen) && !st.inUse(old) && old.To != c.From {
		st.rep.strays[strayKey{Ino: old.Ino, Gen: old.Gen, Col: old.Comp, DS: old.To}] = c.Now
	}
	st.rep.rebuilds[k] = rebuildIntent{Ino: c.Ino, Gen: c.Gen, Comp: c.Comp, To: c.To, Term: c.Term, Done: c.Done}
	delete(st.rep.strays, strayKey{Ino: c.Ino, Gen: c.Gen, Col: c.Comp, DS: c.To})
	return result{}
}

// applyRebuildProgress moves the intent's Done forward; a report of an
// attempt that is no longer the intent's (another target, generation or
// term) changes nothing.
func (st *state) applyRebuildProgress(c *rebuildProgressCmd) result {
	k := compKey{Ino: c.Ino, Comp: c.Comp}
	in, ok := st.rep.rebuilds[k]
	if !ok || in.Gen != c.Gen || in.To != c.To || in.Term != c.Term || in.Dirty {
		return fail(errf(syscall.ESTALE, "component %d of inode %d: no rebuild onto %s in term %d, or the file was granted for writing since", c.Comp, c.Ino, c.To, c.Term))
	}
	if c.Done > in.Done {
		in.Done = c.Done
		st.rep.rebuilds[k] = in
	}
	return result{}
}

// inUse reports whether the target of intent r is where its component is:
// an in-place rebuild, whose target must never be collected.
func (st *state) inUse(r rebuildIntent) bool {
	n := st.get(r.Ino)
	return n != nil && n.isFile() && n.Layout.Generation == r.Gen &&
		int(r.Comp) < len(n.Layout.Targets) && n.Layout.Targets[r.Comp] == r.To
}

func (st *state) applyRebuildReset(c *rebuildResetCmd) result {
	for k, in := range st.rep.rebuilds {
		if k.Ino == c.Ino {
			in.Done, in.Dirty = 0, true
			st.rep.rebuilds[k] = in
		}
	}
	return result{}
}

// needsReset reports whether file ino has a rebuild whose progress a write
// grant must reset; the caller holds the FSM's lock.
func (st *state) needsReset(ino uint64) bool {
	for k, in := range st.rep.rebuilds {
		if k.Ino == ino && !in.Dirty {
			return true
		}
	}
	return false
}

func (st *state) applyRebuildDone(c *rebuildDoneCmd) result {
	n, l, err := st.currentLayout(c.Ino, c.Gen)
	if err != nil {
		return fail(err)
	}
	if err := checkMove(c.Ino, l, c.Comp, c.From, c.To); err != nil {
		return fail(err)
	}
	k := compKey{Ino: c.Ino, Comp: c.Comp}
	if in, ok := st.rep.rebuilds[k]; !ok || in.To != c.To || in.Gen != c.Gen {
		return fail(errf(syscall.ESTALE, "component %d of inode %d: no rebuild onto %s in progress", c.Comp, c.Ino, c.To))
	}
	delete(st.rep.rebuilds, k)
	delete(st.rep.damaged, damagedKey{Ino: c.Ino, Gen: c.Gen, Col: c.Comp}) // rewritten whole
	if c.From != c.To {
		w := st.w(c.Ino)
		targets := slices.Clone(w.Layout.Targets)
		targets[c.Comp] = c.To
		w.Layout.Targets = targets
		st.rep.strays[strayKey{Ino: c.Ino, Gen: c.Gen, Col: c.Comp, DS: c.From}] = c.Now
	}
	if e := st.staleOf(n); e.has(c.Comp) {
		next := staleEntry{Ino: e.Ino, Gen: e.Gen}
		for _, sc := range e.Comps {
			if sc.Comp != c.Comp {
				next.Comps = append(next.Comps, sc)
			}
		}
		if len(next.Comps) == 0 {
			delete(st.rep.stale, c.Ino)
		} else {
			st.rep.stale[c.Ino] = next
		}
	}
	return result{}
}

func (st *state) applyRebuildAbort(c *rebuildAbortCmd) result {
	k := compKey{Ino: c.Ino, Comp: c.Comp}
	in, ok := st.rep.rebuilds[k]
	if !ok {
		return result{}
	}
	delete(st.rep.rebuilds, k)
	if !st.inUse(in) {
		st.rep.strays[strayKey{Ino: in.Ino, Gen: in.Gen, Col: in.Comp, DS: in.To}] = c.Now
	}
	return result{}
}

func (st *state) applyRepairForget(c *repairForgetCmd) result {
	for _, ino := range c.Inos {
		n := st.get(ino)
		gen, live := uint64(0), n != nil && n.isFile()
		if live {
			gen = n.Layout.Generation
		}
		if e, ok := st.rep.stale[ino]; ok && (!live || e.Gen != gen) {
			delete(st.rep.stale, ino)
		}
		for k, in := range st.rep.rebuilds {
			if k.Ino == ino && (!live || in.Gen != gen) {
				delete(st.rep.rebuilds, k)
				st.rep.strays[strayKey{Ino: in.Ino, Gen: in.Gen, Col: in.Comp, DS: in.To}] = c.Now
			}
		}
		for k := range st.rep.damaged {
			if k.Ino == ino && (!live || k.Gen != gen) {
				delete(st.rep.damaged, k)
			}
		}
	}
	return result{}
}

func (st *state) applyDrain(c *drainCmd) result {
	if _, ok := st.ds[c.ID]; !ok {
		return fail(errf(syscall.ENOENT, "data server %q is not registered", c.ID))
	}
	if c.Drain {
		st.rep.draining[c.ID] = true
	} else {
		delete(st.rep.draining, c.ID)
	}
	return result{}
}

func (st *state) applyStrayPurge(c *strayPurgeCmd) result {
	for _, k := range c.Keys {
		delete(st.rep.strays, k)
	}
	return result{}
}

func (st *state) applyDamaged(c *damagedCmd) result {
	r := c.Rec
	k := damagedKey{Ino: r.Ino, Gen: r.Gen, Col: r.Col}
	if c.Clear {
		if old, ok := st.rep.damaged[k]; ok && (c.IfFound == 0 || old.Found == c.IfFound) {
			delete(st.rep.damaged, k)
		}
		return result{}
	}
	if _, _, err := st.currentLayout(r.Ino, r.Gen); err != nil {
		return fail(err)
	}
	r.Blocks = slices.Clone(r.Blocks)
	st.rep.damaged[k] = r
	return result{}
}

// grantHorizonCmd raises the write-grant horizon to Until for the leader
// of Term.
type grantHorizonCmd struct {
	Until int64
	Term  uint64
}

func (st *state) applyGrantHorizon(c *grantHorizonCmd) result {
	r := &st.rep
	if c.Term > r.horizonTerm {
		r.prevUntil, r.horizonTerm = r.grantsUntil, c.Term
	}
	r.grantsUntil = max(r.grantsUntil, c.Until)
	return result{}
}

// predecessorsUntil is how long write capabilities granted by the leaders
// of terms before term may last.
func (r repairState) predecessorsUntil(term uint64) int64 {
	if r.horizonTerm >= term {
		return r.prevUntil
	}
	return r.grantsUntil
}

// applyRepair dispatches the failure-handling commands; ok is false for a
// type that is not one of them.
func (st *state) applyRepair(t cmdType, p any) (result, bool) {
	switch t {
	case cmdStale:
		return st.applyStale(p.(*staleCmd)), true
	case cmdRebuildStart:
		return st.applyRebuildStart(p.(*rebuildStartCmd)), true
	case cmdRebuildDone:
		return st.applyRebuildDone(p.(*rebuildDoneCmd)), true
	case cmdRebuildAbort:
		return st.applyRebuildAbort(p.(*rebuildAbortCmd)), true
	case cmdRepairForget:
		return st.applyRepairForget(p.(*repairForgetCmd)), true
	case cmdDrain:
		return st.applyDrain(p.(*drainCmd)), true
	case cmdStrayPurge:
		return st.applyStrayPurge(p.(*strayPurgeCmd)), true
	case cmdDamaged:
		return st.applyDamaged(p.(*damagedCmd)), true
	case cmdGrantHorizon:
		return st.applyGrantHorizon(p.(*grantHorizonCmd)), true
	case cmdRebuildProgress:
		return st.applyRebuildProgress(p.(*rebuildProgressCmd)), true
	case cmdRebuildReset:
		return st.applyRebuildReset(p.(*rebuildResetCmd)), true
	}
	return result{}, false
}

// newRepairPayload returns the zero payload of a failure-handling command
// type, or nil.
func newRepairPayload(t cmdType) any {
	switch t {
	case cmdStale:
		return new(staleCmd)
	case cmdRebuildStart:
		return new(rebuildStartCmd)
	case cmdRebuildDone:
		return new(rebuildDoneCmd)
	case cmdRebuildAbort:
		return new(rebuildAbortCmd)
	case cmdRepairForget:
		return new(repairForgetCmd)
	case cmdDrain:
		return new(drainCmd)
	case cmdStrayPurge:
		return new(strayPurgeCmd)
	case cmdDamaged:
		return new(damagedCmd)
	case cmdGrantHorizon:
		return new(grantHorizonCmd)
	case cmdRebuildProgress:
		return new(rebuildProgressCmd)
	case cmdRebuildReset:
		return new(rebuildResetCmd)
	}
	return nil
}

// Snapshot records of the failure-handling state, written after the
// tiers in this order (snapshot.go): stale entries by inode, rebuild
// intents by (inode, component), strays by key, draining data servers by
// id, damage records by key.

// drainRecord is one draining data server in a snapshot.
type drainRecord struct {
	ID string
}

// strayRecord is one stray in a snapshot.
type strayRecord struct {
	Key   strayKey
	Since int64
}

// writeRepair writes the failure-handling records of v with put.
func writeRepair(put func(any) error, r repairState) error {
	for _, ino := range slices.Sorted(maps.Keys(r.stale)) {
		e := r.stale[ino]
		if err := put(&e); err != nil {
			return fmt.Errorf("write snapshot stale %d: %w", ino, err)
		}
	}
	keys := slices.SortedFunc(maps.Keys(r.rebuilds), func(a, b compKey) int {
		return cmp.Or(cmp.Compare(a.Ino, b.Ino), cmp.Compare(a.Comp, b.Comp))
	})
	for _, k := range keys {
		in := r.rebuilds[k]
		if err := put(&in); err != nil {
			return fmt.Errorf("write snapshot rebuild %d/%d: %w", k.Ino, k.Comp, err)
		}
	}
	strays := slices.SortedFunc(maps.Keys(r.strays), compareStray)
	for _, k := range strays {
		if err := put(&strayRecord{Key: k, Since: r.strays[k]}); err != nil {
			return fmt.Errorf("write snapshot stray %d: %w", k.Ino, err)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(r.draining)) {
		if err := put(&drainRecord{ID: id}); err != nil {
			return fmt.Errorf("write snapshot draining %s: %w", id, err)
		}
	}
	damaged := slices.SortedFunc(maps.Keys(r.damaged), func(a, b damagedKey) int {
		return cmp.Or(cmp.Compare(a.Ino, b.Ino), cmp.Compare(a.Gen, b.Gen), cmp.Compare(a.Col, b.Col))
	})
	for _, k := range damaged {
		rec := r.damaged[k]
		if err := put(&rec); err != nil {
			return fmt.Errorf("write snapshot damaged %d: %w", k.Ino, err)
		}
	}
	return nil
}

func compareStray(a, b strayKey) int {
	return cmp.Or(cmp.Compare(a.Ino, b.Ino), cmp.Compare(a.Gen, b.Gen), cmp.Compare(a.Col, b.Col), cmp.Compare(a.DS, b.DS))
}

// repairCounts are the record counts of the failure-handling state, as
// the snapshot header carries them.
type repairCounts struct {
	Stale, Rebuilds, Strays, Draining, Damaged uint64
}

func (r repairState) counts() repairCounts {
	return repairCounts{
		Stale:    uint64(len(r.stale)),
		Rebuilds: uint64(len(r.rebuilds)),
		Strays:   uint64(len(r.strays)),
		Draining: uint64(len(r.draining)),
		Damaged:  uint64(len(r.damaged)),
	}
}

// readRepair reads the failure-handling records counted in n with get.
func readRepair(get func(any) error, n repairCounts) (repairState, error) {
	r := newRepairState()
	for i := uint64(0); i < n.Stale; i++ {
		var e staleEntry
		if err := get(&e); err != nil {
			return r, fmt.Errorf("%w: stale record %d: %w", ErrSnapshot, i, err)
		}
		r.stale[e.Ino] = e
	}
	for i := uint64(0); i < n.Rebuilds; i++ {
		var in rebuildIntent
		if err := get(&in); err != nil {
			return r, fmt.Errorf("%w: rebuild record %d: %w", ErrSnapshot, i, err)
		}
		r.rebuilds[compKey{Ino: in.Ino, Comp: in.Comp}] = in
	}
	for i := uint64(0); i < n.Strays; i++ {
		var s strayRecord
		if err := get(&s); err != nil {
			return r, fmt.Errorf("%w: stray record %d: %w", ErrSnapshot, i, err)
		}
		r.strays[s.Key] = s.Since
	}
	for i := uint64(0); i < n.Draining; i++ {
		var d drainRecord
		if err := get(&d); err != nil {
			return r, fmt.Errorf("%w: draining record %d: %w", ErrSnapshot, i, err)
		}
		r.draining[d.ID] = true
	}
	for i := uint64(0); i < n.Damaged; i++ {
		var l damagedRecord
		if err := get(&l); err != nil {
			return r, fmt.Errorf("%w: damaged record %d: %w", ErrSnapshot, i, err)
		}
		r.damaged[damagedKey{Ino: l.Ino, Gen: l.Gen, Col: l.Col}] = l
	}
	return r, nil
}
