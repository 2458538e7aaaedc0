package jobs

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// SignatureHeader carries the webhook body's HMAC-SHA256 under the
// secret given at submission, as "sha256=<hex>".
const SignatureHeader = "Silt-Signature"

// Sign returns the value of SignatureHeader for body under secret.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// maxBackoff caps the wait between webhook tries.
const maxBackoff = time.Minute

// deliver POSTs the finished job to the webhook, retrying with
// exponential backoff until a 2xx answer or the last try, and says how
// it went.
func (m *Manager) deliver(hook *Webhook, job Job) string {
	body, err := json.Marshal(job)
	if err != nil {
		return "not sent: " + err.Error()
	}
	client := &http.Client{Timeout: m.cfg.WebhookTimeout}
	wait := m.cfg.WebhookBackoff
	var last string
	for try := 1; try <= m.cfg.WebhookAttempts; try++ {
		if try > 1 {
			if m.sleep(m.ctx, wait) != nil {
				return fmt.Sprintf("abandoned at shutdown after %d tries: %s", try-1, last)
			}
			wait = min(2*wait, maxBackoff)
		}
		last = m.post(client, hook, job.Handle, body)
		if last == "" {
			m.met.webhooks.WithLabelValues("delivered").Inc()
			return fmt.Sprintf("delivered after %d tries", try)
		}
		m.log.Info("query webhook failed", zap.String("handle", job.Handle), zap.Int("try", try), zap.String("reason", last))
	}
	m.met.webhooks.WithLabelValues("failed").Inc()
	return fmt.Sprintf("failed after %d tries: %s", m.cfg.WebhookAttempts, last)
}

// post sends one try; it returns "" on a 2xx answer, else why not.
func (m *Manager) post(client *http.Client, hook *Webhook, handle string, body []byte) string {
	req, err := http.NewRequestWithContext(m.ctx, http.MethodPost, hook.URL, bytes.NewReader(body))
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Silt-Query-Handle", handle)
	if hook.Secret != "" {
		req.Header.Set(SignatureHeader, Sign(hook.Secret, body))
	}
	resp, err := client.Do(req)
	if err != nil {
		return err.Error()
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "HTTP " + resp.Status
	}
	return ""
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
