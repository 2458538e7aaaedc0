package core

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// TenantLogBytes adds up the sizes of each tenant's tier-1 log files (the
// segment files under logs/<tenant>/, not the node-wide write-ahead log),
// for the storage metrics. Streams are loaded on first use, so the engine
// does not hold every segment's size; this walks the tenants' directories
// instead, reading file sizes and no data. The metrics call it in the
// background on their own schedule, never during a scrape.
func (s *Store) TenantLogBytes(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	tenants, err := os.ReadDir(s.logsDir())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return out, nil
		}
		return nil, err
	}
	for _, t := range tenants {
		if !t.IsDir() {
			continue
		}
		var n int64
		err := filepath.WalkDir(filepath.Join(s.logsDir(), t.Name()), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // removed while walking (a tiered file, a deleted stream)
				}
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					n += info.Size()
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		out[t.Name()] = n
	}
	return out, nil
}
