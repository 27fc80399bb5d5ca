# The two commands the README documents. Both do all set-up on a fresh machine.
.PHONY: run test
run:
	bash scripts/setup.sh && .venv/bin/brain serve
test:
	bash scripts/setup.sh && bash scripts/test.sh
