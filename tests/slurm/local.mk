# slurm
check-slurm:
	@echo "check-slurm: no Slurm tests yet"
.PHONY: check-slurm
