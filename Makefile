# npusim -- the two commands of README.md, and a few conveniences.
#   make run    install missing packages, build simrun, simulate Llama-3 405B on 16K NPUs
#   make test   install missing packages, build, run every test
# CMake does the real work; this file only strings the steps together.
BUILD ?= build
JOBS ?= 2
PLATFORM ?= platforms/16k_npu.xml
WORKLOAD ?= workloads/llama.json

.PHONY: deps build run test test-asan bench clean

deps:
	@sh scripts/install-deps.sh

.PHONY: configure build-simrun
configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS)

# make run needs simrun only: not the tests, not simsweep.
build-simrun: configure
	@cmake --build $(BUILD) -j$(JOBS) --target simrun

run: build-simrun
	$(BUILD)/simrun $(PLATFORM) $(WORKLOAD)

test: build
	sh tests/layers_test.sh
	$(BUILD)/npusim_tests
	sh tests/cli_test.sh $(BUILD)/simrun
	sh tests/output_test.sh $(BUILD)/simrun
	sh tests/sweep_test.sh $(BUILD)
	sh tests/parallel_test.sh $(BUILD)
	sh tests/slurm_test.sh $(BUILD)
	sh tests/analysis_test.sh
	sh tests/gen_platform_test.sh
	sh tests/moe_fold_test.sh $(BUILD)

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer.
test-asan: deps
	@cmake -S . -B $(BUILD)-asan -DNPUSIM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(BUILD)-asan -j$(JOBS)
	ASAN_OPTIONS=detect_leaks=0 $(BUILD)-asan/npusim_tests
	ASAN_OPTIONS=detect_leaks=0 sh tests/cli_test.sh $(BUILD)-asan/simrun
	ASAN_OPTIONS=detect_leaks=0 sh tests/sweep_test.sh $(BUILD)-asan

bench: build
	sh scripts/bench_simrun.sh

clean:
	rm -rf $(BUILD) $(BUILD)-asan
