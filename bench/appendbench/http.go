package main

import (
	"time"
)

// httpRuns is filled in with the SDK.
func httpRuns(silt, dir string, dur time.Duration) ([]result, error) { return nil, nil }
