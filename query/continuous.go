package query

import (
	"context"
	"sort"
	"time"
)

// A continuous query follows its streams and emits each window's stats
// once the window has closed, until it is cancelled. Its shape is fixed
// so that its memory stays bounded by the windows still open:
//
//	from … | [where|eval|project|parse|bin …] | window … (on _time)
//	  | stats … by window_start[, …] | [where|eval|project …]
//
// A window [s, s+size) closes when the clock passes s+size+grace: event
// time is the time the server appended the event, so no event of it can
// still arrive after that but one appended in the grace's moments.

// CheckContinuous reports why q cannot run continuously, or nil.
func (q *Query) CheckContinuous() error {
	_, err := q.continuousWindow()
	return err
}

// continuousWindow is CheckContinuous, returning the window.
func (q *Query) continuousWindow() (*windowStage, error) {
	p := q.pipe
	var win *windowStage
	var stats *statsStage
	for _, st := range p.stages {
		switch x := st.(type) {
		case *whereStage, *evalStage, *projectStage:
		case *parseStage, *binStage:
			if stats != nil {
				return nil, q.contErr("parse and bin go before the window")
			}
		case *windowStage:
			if win != nil {
				return nil, q.contErr("it has more than one window")
			}
			if x.field != FieldTime {
				return nil, q.contErr("its window must be over _time, the append time, which the clock closes")
			}
			win = x
		case *statsStage:
			if win == nil || stats != nil {
				return nil, q.contErr("it needs one stats after its window")
			}
			if !containsStr(x.keyNames, "window_start") {
				return nil, q.contErr("its stats must be by window_start")
			}
			stats = x
		default:
			return nil, q.contErr("sort, head, top and join need the whole input; only where, eval, project, parse, bin, one window and its stats may run continuously")
		}
	}
	if stats == nil {
		return nil, q.contErr("it needs a window and a stats … by window_start")
	}
	return win, nil
}

func (q *Query) contErr(msg string) error {
	return errAt(0, "this query cannot run continuously: %s", msg).hint("for example: from a/b | window tumbling 1m | stats count() by window_start").bind(q.src)
}

// follower is a continuous scan's state between reads.
type follower struct {
	window      *windowStage
	grace, poll time.Duration
	flush       func() error
	stats       *statsSink
}

// idle emits the windows that have closed by now.
func (f *follower) idle(now time.Time) error {
	if f.stats != nil {
		if err := f.stats.emitClosed(now.Add(-f.grace), f.window.size); err != nil {
			return err
		}
	}
	if f.flush != nil {
		return f.flush()
	}
	return nil
}

func (f *follower) wait(ctx context.Context) error {
	t := time.NewTimer(f.poll)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// emitClosed emits and forgets the groups whose window ended at or before
// cutoff, oldest window first.
func (s *statsSink) emitClosed(cutoff time.Time, size time.Duration) error {
	ki := -1
	for i, n := range s.st.keyNames {
		if n == "window_start" {
			ki = i
		}
	}
	var closed, open []*group
	for _, g := range s.order {
		start, ok := g.keys[ki].(time.Time)
		if ok && start.Add(size).After(cutoff) {
			open = append(open, g)
			continue
		}
		closed = append(closed, g)
	}
	if len(closed) == 0 {
		return nil
	}
	sort.SliceStable(closed, func(i, j int) bool {
		a, _ := closed[i].keys[ki].(time.Time)
		b, _ := closed[j].keys[ki].(time.Time)
		return a.Before(b)
	})
	for key, g := range s.groups {
		if start, ok := g.keys[ki].(time.Time); !ok || !start.Add(size).After(cutoff) {
			delete(s.groups, key)
		}
	}
	s.order = open
	for _, g := range closed {
		for i := range g.accs {
			s.values -= len(g.accs[i].vals) + len(g.accs[i].seen)
		}
		if err := s.next.push(s.row(g)); err != nil {
			return err
		}
	}
	return nil
}
