// Package serve runs fieldwork's reference consumer as `fieldwork consume` does: one of the
// bundled handlers (package handlers) on the public runner (package consumer), the store readied
// first, Prometheus metrics served when asked, and a second interruption abandoning the
// batches in flight (docs/design.md §3.5).
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fieldwork/fieldwork/consumer"
	"github.com/fieldwork/fieldwork/inbox"
	"github.com/fieldwork/fieldwork/internal/consume/handlers"
	"github.com/fieldwork/fieldwork/internal/consumerlink"
	"github.com/fieldwork/fieldwork/internal/dedup"
	"github.com/fieldwork/fieldwork/internal/fwerr"
	"github.com/fieldwork/fieldwork/internal/inboxlink"
)

// Options are a run of the reference consumer.
type Options struct {
	// Runner are the runner's options (the public ones and internal/consumerlink's); Run
	// adds the Logger and the Registerer.
	Runner []consumer.Opt
	// Consumer is the marker consumer name (the option consumer.Consumer, default the
	// group), which the bundled handlers key their rows by.
	Consumer string
	// Logger receives the runner's and the handler's logs (default: discard).
	Logger *slog.Logger
	// HandlerName is the bundled handler to run (handlers.Names).
	HandlerName string
	// Schema is the store's schema, where the handler keeps its tables.
	Schema string
	// WebhookURL and WebhookTimeout configure the webhook handler.
	WebhookURL     string
	WebhookTimeout time.Duration
	// Migrate applies the store's and the handler's migrations first (consumerlink.Prepare);
	// without it a store that is not at this binary's version is refused.
	Migrate bool
	// MetricsAddr, when set, is where Prometheus metrics are served (/metrics).
	MetricsAddr string
	// Interrupts, when set, delivers the process's interruptions. The first one is the
	// caller's to act on (it cancels ctx: the run drains); a second one abandons the batches
	// in flight (consumer.Runner.Abort).
	Interrupts <-chan os.Signal
}

// Run readies st for the handler, runs the engine until ctx is done, --stop-when-idle, or a
// failure, and returns what it did. An abandoned run is an interruption (exit 130); a
// handler or option the engine refuses is a usage error.
func Run(ctx context.Context, st *dedup.Store, o Options) (consumer.Stats, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	h, err := handlers.New(o.HandlerName, handlers.Config{
		Consumer: o.Consumer, Driver: st.Driver(), Schema: o.Schema, Logger: log, Registerer: reg,
		WebhookURL: o.WebhookURL, WebhookTimeout: o.WebhookTimeout,
	})
	if err != nil {
		return consumer.Stats{}, fwerr.Wrap(fwerr.KindUsage, err)
	}
	steps, err := consumerlink.Prepare(ctx, st, h, o.Migrate)
	if err != nil {
		return consumer.Stats{}, err
	}
	for _, s := range steps {
		log.Info("migrated the dedup store", "version", s.Version, "name", s.Name, "table", st.Table())
	}
	if o.MetricsAddr != "" {
		ln, err := net.Listen("tcp", o.MetricsAddr)
		if err != nil {
			return consumer.Stats{}, fmt.Errorf("serve metrics on %s: %w (choose another --metrics-addr, or \"\" to turn metrics off)", o.MetricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		log.Info("serving metrics", "addr", "http://"+ln.Addr().String()+"/metrics")
	}

	opts := append(slices.Clone(o.Runner), consumer.Logger(log), consumer.Registerer(reg))
	eng, err := consumer.New(inboxlink.NewStore(st).(*inbox.Store), h, opts...)
	if err != nil {
		return consumer.Stats{}, fwerr.Wrap(fwerr.KindUsage, err)
	}
	if o.Interrupts != nil {
		go abortOnSecond(o.Interrupts, eng, log)
	}
	err = eng.Run(ctx)
	if errors.Is(err, consumer.ErrAborted) {
		return eng.Stats(), fwerr.Wrap(fwerr.KindInterrupted, err)
	}
	return eng.Stats(), err
}

// abortOnSecond abandons eng's batches in flight at the second interruption, until eng ends.
func abortOnSecond(interrupts <-chan os.Signal, eng *consumer.Runner, log *slog.Logger) {
	n := 0
	for {
		select {
		case <-interrupts:
			if n++; n >= 2 {
				log.Warn("second signal: abandoning batches in flight")
				eng.Abort()
				return
			}
		case <-eng.Done():
			return
		}
	}
}
