--[[
job_submit.lua - example for Slurm's job_submit/lua plugin (JobSubmitPlugins=lua;
the file lives next to slurm.conf). Slurm 22.05 links this plugin with
liblua5.1, so this is Lua 5.1.

It turns "bw=N" in a job's --comment (N GB/s of drain bandwidth from the job's
tier to the global namespace) into a request for N strata_bw licenses. With
Licenses=strata_bw:TOTAL in slurm.conf (TOTAL = what the global namespace can
absorb, in GB/s), Slurm then starts no more tier jobs than that:

    sbatch -N4 --storage-tier=capacity=200G,drain=ckpt/*:strata:/proj/run42 --comment=bw=20 job.sh
    scontrol show job $ID | grep Licenses     ->  Licenses=strata_bw:20

An example for the QoS work to come (docs/slurm.md): where a job states its
bandwidth may change; the license mechanics will not.
]]

local LICENSE = "strata_bw"
local MAX_BW = 100000

-- bandwidth returns the N of a "bw=N" word in s (nil if none), or false and
-- a message when the value is not a whole number in range.
local function bandwidth(s)
	if s == nil then
		return nil
	end
	local v = string.match(" " .. s, "[%s,;]bw=([^%s,;]*)")
	if v == nil then
		return nil
	end
	local n = tonumber(v)
	if n == nil or not string.match(v, "^%d+$") or n < 1 or n > MAX_BW then
		return false, string.format("bw=%s: want a whole number of GB/s from 1 to %d, e.g. --comment=bw=20", v, MAX_BW)
	end
	return n
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	local n, err = bandwidth(job_desc.comment)
	if n == false then
		slurm.log_user("strata: %s", err)
		return slurm.ERROR
	end
	if n == nil then
		return slurm.SUCCESS
	end
	local lic = job_desc.licenses
	if lic ~= nil and string.find("," .. lic .. ",", "," .. LICENSE .. "[:,]") then
		return slurm.SUCCESS -- the job asked for the license itself
	end
	if lic == nil or lic == "" then
		job_desc.licenses = LICENSE .. ":" .. n
	else
		job_desc.licenses = lic .. "," .. LICENSE .. ":" .. n
	end
	slurm.log_info("job_submit.lua: uid %u: bw=%d -> licenses %s", submit_uid, n, job_desc.licenses)
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

return slurm.SUCCESS
