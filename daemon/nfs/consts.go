package nfs

// NFSv4.1/4.2 protocol numbers (RFC 8881, RFC 7862, RFC 8435).

const (
	progNFS  = 100003
	nfsVers4 = 4
)

// Operation numbers.
const (
	opAccess            = 3
	opClose             = 4
	opCommit            = 5
	opCreate            = 6
	opDelegPurge        = 7
	opDelegReturn       = 8
	opGetattr           = 9
	opGetfh             = 10
	opLink              = 11
	opLock              = 12
	opLockt             = 13
	opLocku             = 14
	opLookup            = 15
	opLookupp           = 16
	opNverify           = 17
	opOpen              = 18
	opOpenattr          = 19
	opOpenConfirm       = 20
	opOpenDowngrade     = 21
	opPutfh             = 22
	opPutpubfh          = 23
	opPutrootfh         = 24
	opRead              = 25
	opReaddir           = 26
	opReadlink          = 27
	opRemove            = 28
	opRename            = 29
	opRenew             = 30
	opRestorefh         = 31
	opSavefh            = 32
	opSecinfo           = 33
	opSetattr           = 34
	opSetclientid       = 35
	opSetclientidConfrm = 36
	opVerify            = 37
	opWrite             = 38
	opReleaseLockowner  = 39
	opBackchannelCtl    = 40
	opBindConnToSession = 41
	opExchangeID        = 42
	opCreateSession     = 43
	opDestroySession    = 44
	opFreeStateid       = 45
	opGetDirDelegation  = 46
	opGetdeviceinfo     = 47
	opGetdevicelist     = 48
	opLayoutcommit      = 49
	opLayoutget         = 50
	opLayoutreturn      = 51
	opSecinfoNoName     = 52
	opSequence          = 53
	opSetSSV            = 54
	opTestStateid       = 55
	opWantDelegation    = 56
	opDestroyClientID   = 57
	opReclaimComplete   = 58
	opAllocate          = 59
	opLayouterror       = 64
	opLayoutstats       = 65
	opRemoveXattr       = 75
	opIllegal           = 10044
)

// Status codes (nfsstat4).
const (
	nfs4OK                 = 0
	nfs4errPerm            = 1
	nfs4errNoent           = 2
	nfs4errIO              = 5
	nfs4errNxio            = 6
	nfs4errAccess          = 13
	nfs4errExist           = 17
	nfs4errXdev            = 18
	nfs4errNotdir          = 20
	nfs4errIsdir           = 21
	nfs4errInval           = 22
	nfs4errFbig            = 27
	nfs4errNospc           = 28
	nfs4errRofs            = 30
	nfs4errMlink           = 31
	nfs4errNametoolong     = 63
	nfs4errNotempty        = 66
	nfs4errDquot           = 69
	nfs4errStale           = 70
	nfs4errBadhandle       = 10001
	nfs4errBadCookie       = 10003
	nfs4errNotsupp         = 10004
	nfs4errToosmall        = 10005
	nfs4errServerfault     = 10006
	nfs4errBadtype         = 10007
	nfs4errDelay           = 10008
	nfs4errSame            = 10009
	nfs4errDenied          = 10010
	nfs4errExpired         = 10011
	nfs4errLocked          = 10012
	nfs4errGrace           = 10013
	nfs4errShareDenied     = 10015
	nfs4errWrongsec        = 10016
	nfs4errClidInuse       = 10017
	nfs4errResource        = 10018
	nfs4errNofilehandle    = 10020
	nfs4errMinorVersMism   = 10021
	nfs4errStaleClientid   = 10022
	nfs4errStaleStateid    = 10023
	nfs4errOldStateid      = 10024
	nfs4errBadStateid      = 10025
	nfs4errBadSeqid        = 10026
	nfs4errNotSame         = 10027
	nfs4errLockRange       = 10028
	nfs4errSymlink         = 10029
	nfs4errRestorefh       = 10030
	nfs4errAttrnotsupp     = 10032
	nfs4errNoGrace         = 10033
	nfs4errReclaimBad      = 10034
	nfs4errBadxdr          = 10036
	nfs4errLocksHeld       = 10037
	nfs4errOpenmode        = 10038
	nfs4errBadowner        = 10039
	nfs4errBadchar         = 10040
	nfs4errBadname         = 10041
	nfs4errBadRange        = 10042
	nfs4errLockNotsupp     = 10043
	nfs4errOpIllegal       = 10044
	nfs4errDeadlock        = 10045
	nfs4errFileOpen        = 10046
	nfs4errAdminRevoked    = 10047
	nfs4errBadiomode       = 10049
	nfs4errBadlayout       = 10050
	nfs4errBadsession      = 10052
	nfs4errBadslot         = 10053
	nfs4errCompleteAlready = 10054
	nfs4errConnNotBound    = 10055
	nfs4errLayouttrylater  = 10058
	nfs4errLayoutunavail   = 10059
	nfs4errNomatchLayout   = 10060
	nfs4errUnknownLayout   = 10062
	nfs4errSeqMisordered   = 10063
	nfs4errSequencePos     = 10064
	nfs4errReqTooBig       = 10065
	nfs4errRepTooBig       = 10066
	nfs4errRepTooBigCache  = 10067
	nfs4errRetryUncached   = 10068
	nfs4errTooManyOps      = 10070
	nfs4errOpNotInSession  = 10071
	nfs4errClientidBusy    = 10074
	nfs4errSeqFalseRetry   = 10076
	nfs4errBadHighSlot     = 10077
	nfs4errDeadsession     = 10078
	nfs4errEncrAlgUnsupp   = 10079
	nfs4errNotOnlyOp       = 10081
	nfs4errWrongCred       = 10082
	nfs4errWrongType       = 10083
)

// File types (nfs_ftype4).
const (
	nf4Reg  = 1
	nf4Dir  = 2
	nf4Blk  = 3
	nf4Chr  = 4
	nf4Lnk  = 5
	nf4Sock = 6
	nf4Fifo = 7
)

// EXCHANGE_ID flags.
const (
	exchgidSuppMovedRefer  = 0x1
	exchgidSuppMovedMigr   = 0x2
	exchgidBindPrincState  = 0x100
	exchgidUseNonPNFS      = 0x10000
	exchgidUsePNFSMDS      = 0x20000
	exchgidUsePNFSDS       = 0x40000
	exchgidMaskPNFS        = 0x70000
	exchgidUpdConfirmedRec = 0x40000000
	exchgidConfirmedR      = 0x80000000
)

// Share access and deny (OPEN).
const (
	shareAccessRead  = 1
	shareAccessWrite = 2
	shareAccessBoth  = 3
	shareAccessMask  = 3
	shareDenyNone    = 0
	shareDenyRead    = 1
	shareDenyWrite   = 2
	shareDenyBoth    = 3
)

// ACCESS bits.
const (
	accessRead    = 0x01
	accessLookup  = 0x02
	accessModify  = 0x04
	accessExtend  = 0x08
	accessDelete  = 0x10
	accessExecute = 0x20
)

// stable_how4.
const (
	unstable4 = 0
	dataSync4 = 1
	fileSync4 = 2
)

// Lock types.
const (
	readLT   = 1
	writeLT  = 2
	readwLT  = 3
	writewLT = 4
)

// Layout types and io modes (RFC 8435, RFC 8881).
const (
	layout4FlexFiles = 4
	iomodeRead       = 1
	iomodeRW         = 2
	iomodeAny        = 3
	layoutreturnFile = 1
	layoutreturnFSID = 2
	layoutreturnAll  = 3
	layoutrecallFile = 1
)

// Callback operations (RFC 8881 section 20).
const (
	opCbLayoutrecall = 5
	opCbSequence     = 11
)
