# tempoctl, the Python binding and installation (issue 8; Documentation/install.md).
# `make deps` also installs this group: tempoctl enumerates devices through libcxl, libndctl
# and libdaxctl.
.PHONY: integration-deps test-integration

deps: integration-deps

integration-deps:
	@scripts/deps.sh integration

# The C ABI, configuration, control socket, Python binding, tempoctl and install-tree tests.
test-integration: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) \
	  -R '^(test_capi|test_settings|test_control_server|python_binding|tempoctl_commands|install_tree)$$'

# make install: the tempokv package (Documentation/install.md) from $(BUILD) into
# $(DESTDIR)$(PREFIX). Never runs the package manager (scripts/deps.sh is for building and
# testing): an unbuilt tree is configured and built with what is installed, the eBPF tools
# are built when clang, bpftool and libbpf are present. As root into the live system,
# ldconfig refreshes the loader's cache. The list of installed files is kept for
# make uninstall, which removes exactly those (pass the same PREFIX and DESTDIR).
INSTALLED_FILES := $(BUILD)/installed-files.txt
.PHONY: install uninstall install-ebpf-tools

install:
	$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(BUILD) -j $(JOBS)
	@$(MAKE) --no-print-directory install-ebpf-tools
	@cmake --install $(BUILD) --prefix $(PREFIX) --component tempokv
	@cp $(BUILD)/install_manifest_tempokv.txt $(INSTALLED_FILES)
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" -eq 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi
	@echo "install: $$(grep -c "" $(INSTALLED_FILES)) files under $(DESTDIR)$(PREFIX) (list: $(INSTALLED_FILES))"

install-ebpf-tools:
	@if command -v $(EBPF_CLANG) >/dev/null && command -v bpftool >/dev/null && \
	    pkg-config --exists libbpf && [ -r /sys/kernel/btf/vmlinux ]; then \
	  $(MAKE) --no-print-directory $(addprefix $(EBPF_OUT)/,$(EBPF_TOOLS)); \
	else \
	  echo "install: eBPF tools not built (needs $(EBPF_CLANG), bpftool, libbpf and kernel BTF: scripts/deps.sh ebpf)"; \
	fi

uninstall:
	@cmake -DMANIFEST=$(INSTALLED_FILES) -DPREFIX=$(PREFIX) -P cmake/TempoUninstall.cmake
	@rm -f $(INSTALLED_FILES)
