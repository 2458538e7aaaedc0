package groups

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics exposes each group's readers, rebalances, commits and lag,
// labelled by tenant and group only: per-segment lag is in the API's lag
// answer, not in series whose number would grow with segments.
type metrics struct {
	c                                       *Coordinator
	readers, rebalances, commits, advanced  *prometheus.Desc
	advancedBytes                           *prometheus.Desc
	lagEvents, lagBytes, lagSeconds, errors *prometheus.Desc
}

// lagScrapeTimeout bounds the lag reads of one scrape.
const lagScrapeTimeout = 5 * time.Second

func newMetrics(c *Coordinator) *metrics {
	l := []string{"tenant", "group"}
	return &metrics{
		c:             c,
		readers:       prometheus.NewDesc("silt_group_readers", "Live readers of the group.", l, nil),
		rebalances:    prometheus.NewDesc("silt_group_rebalances_total", "Changes of the group's assignment (joins, leaves, expired sessions, resets) since the node started.", l, nil),
		commits:       prometheus.NewDesc("silt_group_commits_total", "Position commits of the group since the node started.", l, nil),
		advanced:      prometheus.NewDesc("silt_group_committed_events_total", "Events the group's commits moved its positions past since the node started.", l, nil),
		advancedBytes: prometheus.NewDesc("silt_group_committed_bytes_total", "Bytes the group's commits moved its positions past since the node started, estimated from each segment's mean tier-1 record size.", l, nil),
		lagEvents:     prometheus.NewDesc("silt_group_lag_events", "Events appended to the group's streams and not yet committed.", l, nil),
		lagBytes:      prometheus.NewDesc("silt_group_lag_bytes", "Bytes not yet committed, estimated from the mean tier-1 record size.", l, nil),
		lagSeconds:    prometheus.NewDesc("silt_group_lag_seconds", "Age of the oldest event the group has not committed.", l, nil),
		errors:        prometheus.NewDesc("silt_group_lag_errors", "1 when the group's lag could not be computed at this scrape (e.g. a stream was deleted).", l, nil),
	}
}

func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.readers, m.rebalances, m.commits, m.advanced, m.advancedBytes, m.lagEvents, m.lagBytes, m.lagSeconds, m.errors} {
		ch <- d
	}
}

func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	type row struct {
		tenant, name                  string
		readers                       int
		rebalances, commits, advanced uint64
		advancedBytes                 uint64
	}
	m.c.mu.Lock()
	sts := make([]*state, 0, len(m.c.groups))
	for _, st := range m.c.groups {
		sts = append(sts, st)
	}
	m.c.mu.Unlock()
	var rows []row
	for _, st := range sts {
		st.mu.Lock()
		if !st.gone {
			rows = append(rows, row{st.g.Tenant, st.g.Name, m.c.liveCount(st), st.rebalances, st.commits, st.advanced, st.advancedBytes})
		}
		st.mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), lagScrapeTimeout)
	defer cancel()
	for _, r := range rows {
		lv := []string{r.tenant, r.name}
		ch <- prometheus.MustNewConstMetric(m.readers, prometheus.GaugeValue, float64(r.readers), lv...)
		ch <- prometheus.MustNewConstMetric(m.rebalances, prometheus.CounterValue, float64(r.rebalances), lv...)
		ch <- prometheus.MustNewConstMetric(m.commits, prometheus.CounterValue, float64(r.commits), lv...)
		ch <- prometheus.MustNewConstMetric(m.advanced, prometheus.CounterValue, float64(r.advanced), lv...)
		ch <- prometheus.MustNewConstMetric(m.advancedBytes, prometheus.CounterValue, float64(r.advancedBytes), lv...)
		lag, err := m.c.LagTotal(ctx, r.tenant, r.name)
		failed := 0.0
		if err != nil {
			failed = 1
		} else {
			ch <- prometheus.MustNewConstMetric(m.lagEvents, prometheus.GaugeValue, float64(lag.EventsBehind), lv...)
			ch <- prometheus.MustNewConstMetric(m.lagBytes, prometheus.GaugeValue, float64(lag.BytesBehind), lv...)
			ch <- prometheus.MustNewConstMetric(m.lagSeconds, prometheus.GaugeValue, lag.SecondsBehind, lv...)
		}
		ch <- prometheus.MustNewConstMetric(m.errors, prometheus.GaugeValue, failed, lv...)
	}
}
