import csv,sys
rows=list(csv.reader(open(sys.argv[1])))
hdr=rows[1]; data=rows[2:]
ix={h:i for i,h in enumerate(hdr)}
S=lambda r:int(r[ix['Warp Stall Sampling (All Samples)']] or 0)
tot=sum(S(r) for r in data)
print(sys.argv[1],'total',tot)
for i,r in enumerate(data):
    src=r[ix['Source']].strip()
    if 'TRYWAIT' in src or 'DEPBAR' in src or 'UCGABAR_WAIT' in src or src.startswith('BAR') or 'MEMBAR' in src:
        # samples of this and next 8 instr that are BRA back to retry
        s=S(r); extra=0
        for j in range(i+1,min(i+8,len(data))):
            if 'BRA' in data[j][ix['Source']] and '@!P' in data[j][ix['Source']]:
                extra=S(data[j]); break
        if s+extra>=5: print(f"{i:5d} {s+extra:5d} {100*(s+extra)/tot:5.1f}% exec={r[ix['Instructions Executed']]:>7} {src[:70]}")
