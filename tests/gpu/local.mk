# gpu
check-gpu:
	@echo "check-gpu: no GPU tests yet"
.PHONY: check-gpu
