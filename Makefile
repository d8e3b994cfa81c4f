# Plain go commands; see README.md. The binaries are static pure Go: the
# thin client broker, brokerd beside it (which broker executes for what it
# does not do itself, docs/architecture.md §3.2) and the launcher, which
# embeds a seccomp program compiled with libseccomp (cgo) by
# go generate ./launcher/linux, which a test keeps byte-identical.
GO       ?= go
FUZZTIME ?= 10s
STATICCHECK ?= $(shell $(GO) env GOPATH)/bin/staticcheck

.PHONY: build test integration fuzz bench lint demo

build:
	CGO_ENABLED=0 $(GO) build -o bin/broker ./cmd/broker
	CGO_ENABLED=0 $(GO) build -o bin/brokerd ./cmd/brokerd
	CGO_ENABLED=0 $(GO) build -o bin/launcher ./cmd/launcher

# Unit tests, integration tests (they build their own binaries) and every
# fuzz target's seed corpus (go test's 10-minute default per package is
# too close for the integration package on a loaded 2-core machine); then
# the recorder again on the frozen FIPS module, whose SHA-256 cannot copy
# its state (the fallbacks of the retained digest and of the raw digest
# shared until the first redaction); then, alone, the tests that turn the
# kernel's audit on host-wide (kernel-audit), which no other test sees.
test:
	$(GO) test -count=1 -timeout 30m ./...
	GOFIPS140=v1.0.0 $(GO) test -count=1 -run '^TestRecorder' ./receipt
	WARRANT_TEST_HOST_AUDIT=1 $(GO) test -count=1 -p 1 -run '^(TestReaderReadsTheKernelsRecords|TestDenialsKernelAudit)$$' ./broker/internal/audit ./integration

integration:
	$(GO) test -count=1 -v ./integration/...

fuzz:
	for p in $$($(GO) list ./fuzz/... ./broker/internal/identity ./broker/internal/goals ./broker/internal/protect ./broker/internal/toolchain ./broker/internal/contract ./broker/internal/admission); do \
		for t in $$($(GO) test -list '^Fuzz' $$p | grep '^Fuzz'); do \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$p || exit 1; \
		done; \
	done

# The chain's latency benchmarks run a fixed number of times, so that each
# p95 is read from that many samples (a one-second run gives some of them
# a handful; RunTrueSpaced's pauses alone are 45 s of 300 runs), and the
# 1 GiB stream and the 1 GiB egress download three times, each time in
# its turn against its baselines; the observers' costs five times each
# way for a build, twenty for the rest (one run each way cannot resolve
# 2%); every other benchmark runs for go test's default second.
# Their output is also kept in BENCHOUT, and the summary ends the run with
# a table of the chain's goals (integration/benchsummary); it fails the
# target when a benchmark failed, which tee would otherwise hide.
LATENCY  := ^Benchmark(RunTrue|RunTrueSpaced|CLIRunTrue|RunTruePhases|LaunchTrue|LaunchProtected)$$
LATENCYN ?= 300
STREAM   := ^Benchmark(StdoutThroughput|EgressDownload)$$
OBSERVE  := ^Benchmark(DenialObservers|WriteHintObserver)$$
BENCHOUT ?= bin/bench.txt

bench:
	mkdir -p $(dir $(BENCHOUT)) && : > $(BENCHOUT)
	$(GO) test -run '^$$' -bench . -skip '$(LATENCY)|$(STREAM)|$(OBSERVE)' -benchmem ./... 2>&1 | tee -a $(BENCHOUT)
	$(GO) test -run '^$$' -bench '$(OBSERVE)/go-build' -benchtime 5x -benchmem ./integration 2>&1 | tee -a $(BENCHOUT)
	$(GO) test -run '^$$' -bench '$(OBSERVE)/(npm-test|refused-sockets)' -benchtime 20x -benchmem ./integration 2>&1 | tee -a $(BENCHOUT)
	$(GO) test -run '^$$' -bench '$(LATENCY)' -benchtime $(LATENCYN)x -benchmem ./integration 2>&1 | tee -a $(BENCHOUT)
	$(GO) test -run '^$$' -bench '$(STREAM)' -benchtime 3x -benchmem ./integration 2>&1 | tee -a $(BENCHOUT)
	$(GO) run ./integration/benchsummary $(BENCHOUT)

lint:
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo 'gofmt: files above need formatting'; exit 1; }
	$(GO) vet ./...
	$(GO) vet -tags warrant_crashtest ./broker/...
	$(GO) vet -tags warrant_insecure_probe_test ./broker/...
	$(STATICCHECK) ./...
	GOOS=darwin CGO_ENABLED=0 $(GO) vet ./...
	GOOS=darwin CGO_ENABLED=0 $(GO) build ./...

# The workspace is a fresh directory: the repository holds bin/, the
# broker's own binaries, which no workspace may contain.
demo: build
	d=$$(mktemp -d) && mkdir "$$d/ws" && WARRANT_STATE=$$d/state ./bin/broker run --approve --workspace "$$d/ws" -- python3 -c 'print(6*7)'; s=$$?; rm -rf "$$d"; exit $$s
