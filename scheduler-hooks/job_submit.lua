--[[
job_submit.lua - gpuckpt's rules at submission, for slurmctld (optional).

Install: JobSubmitPlugins=lua in slurm.conf and this file beside slurm.conf, or
copy gpuckpt_job_submit() into the site's own job_submit.lua and call it there.

A job that asked for GPU checkpointing (--gpu-checkpoint=on, or
GPUCKPT_CHECKPOINT=on in its environment, or the plugin's default=on) is made
requeueable unless its user said --no-requeue: a checkpoint is only worth
writing if the job comes back to use it.

The warning before the time limit (--signal=USR1@SECONDS: the runtime
checkpoints on SIGUSR1 and the job goes on, so the work done is on disk when
the limit ends the job) cannot be set from here on Slurm 22.05: its
job_submit/lua does not know the fields warn_signal and warn_time and refuses
to set them. The function below sets them only where Slurm exposes them; on
22.05 cli_filter.lua (beside this file) does it on the submit host instead.
]]

-- Seconds before the time limit at which a checkpointing job gets SIGUSR1.
local GPUCKPT_WARN_TIME = 300
local GPUCKPT_WARN_SIGNAL = 10 -- SIGUSR1
local NO_VAL16 = 65534

-- Did the job ask for checkpointing? The plugin records its decision (option,
-- variable, site default) on the submit host in the job's SPANK environment;
-- without the plugin there, the job's own environment is all there is.
local function gpuckpt_wanted(job_desc)
	local spank_env = job_desc.spank_job_env
	if spank_env ~= nil then
		for _, kv in pairs(spank_env) do
			if kv == "GPUCKPT_CHECKPOINT=on" then return true end
			if kv == "GPUCKPT_CHECKPOINT=off" then return false end
		end
	end
	local env = job_desc.environment
	return env ~= nil and env.GPUCKPT_CHECKPOINT == "on"
end

-- Does this Slurm let job_submit/lua read (and so set) a field?
local function has_field(job_desc, name)
	local ok, value = pcall(function() return job_desc[name] end)
	return ok and value ~= nil
end

function gpuckpt_job_submit(job_desc, part_list, submit_uid)
	if not gpuckpt_wanted(job_desc) then
		return slurm.SUCCESS
	end
	if job_desc.requeue == nil or job_desc.requeue == NO_VAL16 then
		job_desc.requeue = 1
		slurm.log_info("gpuckpt: job of uid %u made requeueable (--gpu-checkpoint=on)", submit_uid)
	end
	if has_field(job_desc, "warn_signal") and (job_desc.warn_signal == 0 or job_desc.warn_signal == NO_VAL16) then
		job_desc.warn_signal = GPUCKPT_WARN_SIGNAL
		job_desc.warn_time = GPUCKPT_WARN_TIME
	end
	return slurm.SUCCESS
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	return gpuckpt_job_submit(job_desc, part_list, submit_uid)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

slurm.log_info("gpuckpt: job_submit.lua loaded")
return slurm.SUCCESS
