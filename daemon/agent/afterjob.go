package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/strata-hpc/strata/daemon/rpc"
)

// A tier kept after its job. When the epilog's final drain cannot drain
// every matching file within its time (drainBudget), the tier is not torn
// down with the files still in it: every node stops the mount (the job is
// over) but keeps its data server and its part of the files, the epilog
// returns (the node goes back to service), and the first node's agent
// drains the rest after the job, for at most AfterJobTimeout. Then it
// marks the tier's root drained and every node tears its part down. What
// is still not drained then is recorded as lost, file by file, in the
// registry and the job's output. The phase is persisted: an agent that
// restarts meanwhile resumes the drain (first node) or the wait (others).

// phaseAfterJob is a tier kept after its job for its drains.
const phaseAfterJob = "after-job"

// keepTier keeps t after its job: it stops the mount, persists the phase
// and starts the drain after the job (first node, left is what the final
// drain did not drain) or the wait for it (other nodes). The caller holds
// t.mu.
func (s *Server) keepTier(t *tier, left []undrained) error {
	stopProc(t.proc("mount"), t.marker(), 5*time.Second)
	var errs []error
	if err := unmountTier(t.st.MountPath); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(s.hintsPath(t.st.Job)); err != nil {
		errs = append(errs, err)
	}
	if err := removeMountPoint(t.st.MountPath); err != nil {
		errs = append(errs, err)
	}
	t.smu.Lock()
	t.st.Phase = phaseAfterJob
	t.st.KeepUntil = time.Now().Add(s.cfg.AfterJobTimeout)
	err := t.saveLocked()
	t.smu.Unlock()
	if err != nil {
		errs = append(errs, err)
	}
	if t.st.first() {
		var bytes uint64
		for _, f := range left {
			bytes += f.size
		}
		s.markEpilog(t, epilogKept)
		s.reportDrainOutcome(t, fmt.Sprintf("the final drain did not finish within the epilog's time limit (%v): %d files (%s) are not drained yet; the strata agent on %s drains them after the job, for at most %v (strata tier status %d)",
			s.cfg.EpilogTimeout, len(left), sizeText(bytes), s.cfg.Node, s.cfg.AfterJobTimeout, t.st.Job))
	}
	s.log.Info("tier_kept_after_job", "job_id", t.st.Job, "undrained", len(left))
	s.resumeKept(t)
	return errors.Join(errs...)
}

// resumeKept starts what a kept tier waits for: its drain after the job
// on the first node, the end of that drain on the others.
func (s *Server) resumeKept(t *tier) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if t.st.first() {
			s.drainAfterJob(t)
		} else {
			s.awaitFirstNode(t)
		}
	}()
}

// drainAfterJob drains what the epilog left, until every matching file is
// drained or given up, or until KeepUntil; then it records what is left
// as lost and ends the tier. An agent that stops meanwhile leaves the
// tier kept, for the next agent to resume.
func (s *Server) drainAfterJob(t *tier) {
	t.smu.Lock()
	until := t.st.KeepUntil
	t.smu.Unlock()
	var left []undrained
	var err error
	if d := s.newDrainer(t, lookupIdentity(t.st.UID, t.st.GID)); d != nil {
		ctx, cancel := context.WithDeadline(s.ctx, until)
		left, err = d.finish(ctx)
		cancel()
	}
	if s.ctx.Err() != nil {
		return // the agent stops: the next one resumes
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil {
		msg := oneLine(err.Error() + "; the files not drained are lost with the tier")
		t.rep.put(rpc.TierPutReq{Errors: []string{msg}})
		s.appendJobOutput(t, []string{msg})
	}
	t.smu.Lock()
	for _, f := range left {
		t.st.Drains[f.rel] = &drainRec{State: drainLost, Size: f.size,
			Err: fmt.Sprintf("drain %s: not drained within %v of the job's end (after_job_timeout): lost", f.rel, s.cfg.AfterJobTimeout)}
	}
	t.smu.Unlock()
	s.markEpilog(t, epilogDrained)
	s.reportDrainEnded(t)
	s.reportDrainOutcome(t, "drain after the job done")
	s.reportLost(t)
	if err := s.endTier(t, phaseAfterJob); err != nil {
		s.log.Error("tier_teardown_failed", "job_id", t.st.Job, "err", err)
	}
}

// awaitFirstNode waits, on a node other than the first, until the first
// node has drained a kept tier (or its MDS is gone, or KeepUntil and a
// minute have passed), then ends this node's part of the tier.
func (s *Server) awaitFirstNode(t *tier) {
	t.smu.Lock()
	until := t.st.KeepUntil.Add(time.Minute)
	t.smu.Unlock()
	ctx, cancel := context.WithDeadline(s.ctx, until)
	defer cancel()
	tc, err := t.tierClient(time.Nanosecond)
	if err == nil {
		m := markReader{tc: tc}
		_ = poll(ctx, 250*time.Millisecond, func() (bool, error) {
			return m.read(ctx) == epilogDrained, nil
		})
		tc.Close()
	}
	if s.ctx.Err() != nil {
		return // the agent stops: the next one resumes
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := s.endTier(t, phaseAfterJob); err != nil {
		s.log.Error("tier_teardown_failed", "job_id", t.st.Job, "err", err)
	}
}

// mdsGoneAfter is how long calls to the tier's MDS must fail (other than
// by a refused connection, which is an MDS gone at once) before the other
// nodes take it as gone (the first node is done with it): a call that
// times out is an MDS that is busy, and the files it still drains are on
// these nodes.
const mdsGoneAfter = 2 * time.Second

// markReader reads the first node's mark on the tier's root, through one
// tier client, poll after poll.
type markReader struct {
	tc interface {
		GetXattrIno(context.Context, uint64, string) ([]byte, error)
	}
	refusedSince time.Time // the first of the failures in a row
}

// read returns the first node's mark: "" when there is none yet (or the
// MDS did not answer in time), epilogDrained when the tier's MDS refuses
// connections or has failed every call for mdsGoneAfter.
func (m *markReader) read(ctx context.Context) string {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	v, err := m.tc.GetXattrIno(cctx, rpc.RootIno, epilogXattr)
	switch {
	case err == nil:
		m.refusedSince = time.Time{}
		return string(v)
	case errors.Is(err, rpc.ErrUnavailable) && cctx.Err() == nil:
		// Nothing listens at its address: gone (the first node stops it
		// right after its mark, which this node may not have seen).
		if strings.Contains(err.Error(), "connection refused") {
			return epilogDrained
		}
		// Failed otherwise before the call's time ran out: gone, once it
		// lasts.
		if m.refusedSince.IsZero() {
			m.refusedSince = time.Now()
		}
		if time.Since(m.refusedSince) >= mdsGoneAfter {
			return epilogDrained
		}
	default:
		// An answer that is an error, or no answer in time: the MDS is
		// there (or the caller's time is over), so nothing is known.
		m.refusedSince = time.Time{}
	}
	return ""
}

// reportDrainOutcome tells the job's output (first node) every drain
// failure and lost file not told yet, then the line last, if any.
func (s *Server) reportDrainOutcome(t *tier, last string) {
	t.smu.Lock()
	var rels []string
	drained := 0
	for rel, r := range t.st.Drains {
		switch {
		case r.State == drainDone:
			drained++
		case !t.st.Told[rel+" "+r.Err]:
			rels = append(rels, rel)
		}
	}
	slices.Sort(rels)
	var lines []string
	for i, rel := range rels {
		r := t.st.Drains[rel]
		if i == maxToldFailures {
			lines = append(lines, fmt.Sprintf("and %d more drain failures (strata tier status %d)", len(rels)-i, t.st.Job))
			break
		}
		lines = append(lines, r.Err)
		if t.st.Told == nil {
			t.st.Told = map[string]bool{}
		}
		t.st.Told[rel+" "+r.Err] = true
	}
	if last == "drain after the job done" {
		last = fmt.Sprintf("%s: %d files drained, %d not (strata tier status %d)", last, drained, len(t.st.Drains)-drained, t.st.Job)
	}
	_ = t.saveLocked()
	t.smu.Unlock()
	if last != "" {
		lines = append(lines, last)
	}
	s.appendJobOutput(t, lines)
}

// reportLost records in the registry, file by file, every file whose
// drain failed or was lost: the tier's end takes it with it.
func (s *Server) reportLost(t *tier) {
	t.smu.Lock()
	var rels, errs []string
	for rel, r := range t.st.Drains {
		if r.State != drainDone {
			rels = append(rels, rel)
			errs = append(errs, r.Err)
		}
	}
	t.smu.Unlock()
	if len(rels) > 0 {
		slices.Sort(rels)
		t.rep.put(rpc.TierPutReq{Lost: rels, Errors: errs})
	}
}

// maxToldFailures bounds the drain failures told in a job's output; the
// registry keeps more.
const maxToldFailures = 20

// noteJobOutput records the job's output file (where its stderr goes),
// as slurmctld knows it, for the drain's messages to the user.
func (s *Server) noteJobOutput(t *tier) {
	out, err := s.deps.Scontrol("show", "job", "-o", strconv.FormatUint(uint64(t.st.Job), 10))
	if err != nil {
		s.log.Warn("job_output_unknown", "job_id", t.st.Job, "err", err)
		return
	}
	path := ""
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "StdErr="); ok && strings.HasPrefix(v, "/") {
			path = v
		}
	}
	t.smu.Lock()
	t.st.Output = path
	_ = t.saveLocked()
	t.smu.Unlock()
}

// appendJobOutput appends lines, each prefixed "strata: job J: ", to the
// job's output file, as the job's user (the kernel checks the
// permissions; a file that is gone stays gone).
func (s *Server) appendJobOutput(t *tier, lines []string) {
	t.smu.Lock()
	path := t.st.Output
	t.smu.Unlock()
	if path == "" || len(lines) == 0 {
		return
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "strata: job %d: %s\n", t.st.Job, oneLine(l))
	}
	err := asUser(lookupIdentity(t.st.UID, t.st.GID), func() error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		_, err = f.WriteString(b.String())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		s.log.Warn("job_output_not_written", "job_id", t.st.Job, "file", path, "err", err)
	}
}

// sizeText writes n bytes the way a user reads them: 240.0 MB.
func sizeText(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d bytes", n)
}
