--[[
cli_filter.lua - gpuckpt's rule on the submit host (optional; Slurm 22.05).

Install: CliFilterPlugins=lua in slurm.conf and this file beside slurm.conf on
the login nodes (or merge slurm_cli_pre_submit into the site's own).

A job submitted with --gpu-checkpoint=on (or GPUCKPT_CHECKPOINT=on) and no
--signal of its own gets --signal=USR1@GPUCKPT_WARN_TIME: SIGUSR1 to its steps
that many seconds before the time limit, on which the runtime writes a
checkpoint and lets the job go on. (Without B:, the batch shell itself is not
signalled, so a shell script is not killed by it; put the application in an
srun step, as usual.) job_submit.lua cannot set this on 22.05.
]]

local GPUCKPT_WARN_TIME = 300

-- The options as JSON is the one view of a SPANK plugin's option in 22.05.
local function gpuckpt_wanted(options)
	local all = slurm.json_cli_options(options)
	if string.find(all, '"spank:gpu%-checkpoint":"on"') then return true end
	if string.find(all, '"spank:gpu%-checkpoint":"off"') then return false end
	return os.getenv("GPUCKPT_CHECKPOINT") == "on"
end

function slurm_cli_setup_defaults(options, early_pass)
	return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, pack_offset)
	-- Steps inside an allocation inherit the job's warning; only new jobs get one.
	if os.getenv("SLURM_JOB_ID") ~= nil then
		return slurm.SUCCESS
	end
	local sig = options["signal"]
	if gpuckpt_wanted(options) and (sig == nil or sig == "" or sig == "0@0") then
		options["signal"] = "USR1@" .. GPUCKPT_WARN_TIME
	end
	return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, job_id, step_id)
	return slurm.SUCCESS
end
