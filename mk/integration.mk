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
