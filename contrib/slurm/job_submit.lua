--[[
job_submit.lua - example for Slurm's job_submit/lua plugin (JobSubmitPlugins=lua;
the file lives next to slurm.conf). Slurm 22.05 links this plugin with
liblua5.1, so this is Lua 5.1.

It turns the drain bandwidth a job asks for into strata_bw licenses, one per
GiB/s (rounded up). With Licenses=strata_bw:TOTAL in slurm.conf (TOTAL = what
the global namespace can absorb, in GiB/s), Slurm then starts no more tier
jobs than that:

    sbatch -N4 --storage-tier=capacity=200G,bw=20G,drain=ckpt/*:strata:/proj/run42 job.sh
    scontrol show job $ID | grep Licenses     ->  Licenses=strata_bw:20

The bandwidth comes from the bw=RATE item of --storage-tier (docs/storage-tier.md;
the SPANK plugin has already checked the spec when sbatch ran), or, as an
older alias, from "bw=N" (N whole GiB/s) in the job's --comment. The tier
spec wins when both are given. A job that asks for strata_bw licenses itself
(-L strata_bw:N) keeps its own request.
]]

-- HOLD_FOR_CONTROLLER submits every job that asks for drain bandwidth held,
-- with a comment that says so, for Strata's drain-bandwidth controller
-- (docs/slurm.md) to release once the global namespace can absorb its drain.
-- Off, Slurm starts such a job as soon as its licenses are free, and the
-- controller can only hold the jobs it still finds pending.
local HOLD_FOR_CONTROLLER = false
local HOLD_COMMENT = "strata-hold: waiting for the drain-bandwidth controller"

local LICENSE = "strata_bw"
local MAX_BW = 100000 -- licenses, as jobtier.MaxLicenses
local UNIT = 1073741824 -- bytes per second per license, as jobtier.LicenseUnit
local TIER_OPTION = "_SLURM_SPANK_OPTION_strata_storage_tier="
local SUFFIX = { [""] = 1, k = 1024, m = 1048576, g = 1073741824, t = 1099511627776 }

-- comment_bandwidth returns the N of a "bw=N" word in s (nil if none), or
-- false and a message when the value is not a whole number in range.
local function comment_bandwidth(s)
	if s == nil then
		return nil
	end
	local v = string.match(" " .. s, "[%s,;]bw=([^%s,;]*)")
	if v == nil then
		return nil
	end
	local n = tonumber(v)
	if n == nil or not string.match(v, "^%d+$") or n < 1 or n > MAX_BW then
		return false, string.format("bw=%s: want a whole number of GiB/s from 1 to %d, e.g. --comment=bw=20", v, MAX_BW)
	end
	return n
end

-- tier_spec returns the job's --storage-tier value (nil if none): the SPANK
-- plugin "strata" forwards its option in the job's SPANK environment.
local function tier_spec(job_desc)
	local env = job_desc.spank_job_env
	if type(env) ~= "table" then
		return nil
	end
	for _, v in pairs(env) do
		if type(v) == "string" and string.sub(v, 1, #TIER_OPTION) == TIER_OPTION then
			return string.sub(v, #TIER_OPTION + 1)
		end
	end
	return nil
end

-- rate_licenses turns a bw=RATE value (2G, 500M/s, 1536MiB) into licenses,
-- or false and a message, as jobtier parses it.
local function rate_licenses(val)
	local v = string.gsub(val, "/s$", "")
	if string.sub(v, -2) == "iB" then
		v = string.sub(v, 1, -3)
	end
	if string.sub(v, -1) == "B" then
		v = string.sub(v, 1, -2)
	end
	local num, suf = string.match(v, "^(%d+)([KkMmGgTt]?)$")
	local bytes = num and tonumber(num) * SUFFIX[string.lower(suf)]
	if bytes == nil or bytes < 1 or bytes > MAX_BW * UNIT then
		return false, string.format("storage-tier: item \"bw=%s\": bw must be a drain rate like 2G or 500M (bytes per second), at most %dG", val, MAX_BW)
	end
	return math.ceil(bytes / UNIT)
end

-- tier_bandwidth returns the licenses of the bw= item of a tier spec (nil
-- if none), or false and a message.
local function tier_bandwidth(spec)
	if spec == nil then
		return nil
	end
	for item in string.gmatch(spec, "[^,]+") do
		item = string.match(item, "^%s*(.-)%s*$")
		local key, val = string.match(item, "^([^=]*)=(.*)$")
		if key == "bw" then
			return rate_licenses(val)
		end
	end
	return nil
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	local n, err = tier_bandwidth(tier_spec(job_desc))
	local from = "storage-tier"
	if n == nil then
		n, err = comment_bandwidth(job_desc.comment)
		from = "comment"
	end
	if n == false then
		slurm.log_user("strata: %s", err)
		return slurm.ERROR
	end
	local lic = job_desc.licenses
	local own = lic ~= nil and string.find("," .. lic .. ",", "," .. LICENSE .. "[:,]") ~= nil
	if n == nil and not own then
		return slurm.SUCCESS
	end
	if HOLD_FOR_CONTROLLER and job_desc.priority ~= 0 then -- 0: the user's own --hold
		job_desc.priority = 0
		if job_desc.comment ~= nil and job_desc.comment ~= "" then
			job_desc.comment = HOLD_COMMENT .. "; comment was: " .. job_desc.comment
		else
			job_desc.comment = HOLD_COMMENT
		end
	end
	if own then
		return slurm.SUCCESS -- the job asked for the license itself
	end
	if lic == nil or lic == "" then
		job_desc.licenses = LICENSE .. ":" .. n
	else
		job_desc.licenses = lic .. "," .. LICENSE .. ":" .. n
	end
	slurm.log_info("job_submit.lua: uid %u: bw from %s -> licenses %s", submit_uid, from, job_desc.licenses)
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

return slurm.SUCCESS
