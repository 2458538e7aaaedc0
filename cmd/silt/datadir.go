package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/internal/datadir"
)

// secretsKeyPath is where the key sealing S3 secrets is kept: the
// operator's file, or one beside the NFS handle key in the data dir.
func secretsKeyPath(cfg serveConfig) string {
	if cfg.Auth.SecretsKeyFile != "" {
		return cfg.Auth.SecretsKeyFile
	}
	return filepath.Join(cfg.Core.Dir, "keys", "secrets.key")
}

// checkDataDir runs warnExposedDataDir in the background: a local tier 2
// of many small chunks takes seconds to walk, and a warning need not hold
// up the start. stop ends the walk and waits for it.
func checkDataDir(ctx context.Context, cfg serveConfig, log *zap.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := warnExposedDataDir(ctx, cfg, log); err != nil && ctx.Err() == nil {
			log.Warn("could not check the data directory's permissions", zap.Error(err))
		}
	}()
	return func() { cancel(); <-done }
}

// warnExposedDataDir warns about every directory and file silt keeps its
// data and keys in that other OS users can reach. It reports and changes
// nothing: the modes of existing files are the operator's to fix.
func warnExposedDataDir(ctx context.Context, cfg serveConfig, log *zap.Logger) error {
	err := datadir.Warn(ctx, log, "data directory (core.dir)", cfg.Core.Dir)
	if cfg.Tier.Backend == "fs" && cfg.Tier.FS.Dir != "" && !within(cfg.Tier.FS.Dir, cfg.Core.Dir) {
		err = errors.Join(err, datadir.Warn(ctx, log, "tier-2 directory (tiering.fs.dir)", cfg.Tier.FS.Dir))
	}
	if k := cfg.Auth.SecretsKeyFile; k != "" && !within(k, cfg.Core.Dir) {
		err = errors.Join(err, datadir.Warn(ctx, log, "secrets key file (auth.secrets_key_file)", k))
	}
	return err
}

// within reports whether path is dir or below it, lexically: such a
// path is covered by the data dir's own warning.
func within(path, dir string) bool {
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// openACL opens the acl store with S3 secrets sealed under the secrets
// key, creating the key at first start.
func openACL(cfg serveConfig, store *core.Store, log *zap.Logger) (*acl.Store, error) {
	path := secretsKeyPath(cfg)
	key, created, err := datadir.LoadOrCreateKey(path)
	if err != nil {
		return nil, fmt.Errorf("secrets key (auth.secrets_key_file): %w", err)
	}
	acls, err := acl.Open(store.Catalog(), acl.WithSecretsKey(key), acl.WithLostSecretsKey(cfg.Auth.LostSecretsKey))
	if errors.Is(err, acl.ErrSecretsKey) {
		const fix = "restore the file they were sealed with; if it is lost for good, set auth.lost_secrets_key_id to the key ID above to revoke the S3 keys sealed with it"
		if created {
			// The key that sealed them is missing, not wrong; a new one
			// left behind would only make the next start's message worse.
			os.Remove(path)
			return nil, fmt.Errorf("%w; the secrets key file %s did not exist (auth.secrets_key_file): %s", err, path, fix)
		}
		return nil, fmt.Errorf("%w; %s holds another key (auth.secrets_key_file): %s", err, path, fix)
	}
	if err != nil {
		return nil, err
	}
	if n := acls.SealedAtOpen(); n > 0 {
		log.Info("encrypted the S3 secrets that were stored in clear in the catalog",
			zap.Int("s3_keys", n), zap.String("secrets_key_file", path))
	}
	if ids := acls.RevokedAtOpen(); len(ids) > 0 {
		log.Warn("revoked the S3 keys sealed with the lost secrets key (auth.lost_secrets_key_id); their holders need new keys",
			zap.Strings("access_key_ids", ids), zap.String("lost_key_id", cfg.Auth.LostSecretsKey))
	}
	return acls, nil
}
