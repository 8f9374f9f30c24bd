#!/bin/bash
# A Slurm batch script, submitted as it is: tessera submit --sbatch examples/slurm/train.sh
# The #SBATCH lines give the allocation (2 nodes x 2 GPUs, 10 minutes); the script runs once,
# on the first node, with Slurm's variables (SLURM_JOB_NODELIST, SLURM_NNODES, ...) and
# Tessera's rendezvous (MASTER_ADDR, MASTER_PORT). With real GPUs, start the ranks of every
# node from here (e.g. torchrun with a c10d rendezvous at $MASTER_ADDR:$MASTER_PORT); Tessera
# has no srun yet, so this example prints the allocation and runs one process.
#SBATCH --job-name=slurm_train
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=2
#SBATCH --cpus-per-task=2
#SBATCH --time=00:10:00
#SBATCH --output=slurm-%j.out

echo "job $SLURM_JOB_NAME ($SLURM_JOB_ID): $SLURM_NNODES node(s) [$SLURM_JOB_NODELIST], $SLURM_GPUS_PER_NODE GPU(s) each"
echo "this node: $SLURMD_NODENAME, GPUs $CUDA_VISIBLE_DEVICES; rendezvous $MASTER_ADDR:$MASTER_PORT"
echo "submitted from $SLURM_SUBMIT_DIR, running in $(pwd)"
